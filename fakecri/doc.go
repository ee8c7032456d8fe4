// Package fakecri is a scriptable, deterministic fake of a CRI v1 container
// runtime that behaves like containerd 1.6.
//
// A Runtime implements k8s.io/cri-api's RuntimeService and
// ImageManagerService in process. Time, randomness, blocking and log files
// all come from injected interfaces (Config), and the runtime starts no
// goroutines of its own: a container's "process" is a pure function of its
// script (FAKECRI_* environment variables, see README.md) and of virtual
// time, evaluated lazily whenever a call looks at state. Under a
// deterministic scheduler every run is therefore reproducible.
//
// The same Runtime is served over a unix socket by package
// fakecri/criserver (the `lockstep fakecri` command).
package fakecri
