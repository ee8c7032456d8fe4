package runtimesync

// HonouredContainerFields are the container fields, by their JSON names,
// that runtimesync acts on beyond the CRI configs podspec makes:
// resizePolicy decides whether an in-place resize restarts the container
// (resize.go). node/admission does not warn about them.
func HonouredContainerFields() []string {
	return []string{"resizePolicy"}
}
