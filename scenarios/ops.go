package scenarios

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Op is one operation a plan's action can name: gen draws its arguments,
// exec performs it on a run (before the action's run time passes).
type Op struct {
	// Doc says what the operation does with its arguments.
	Doc  string
	gen  func(Drawer) [3]int
	exec func(*run, [3]int) error
}

// Ops lists every operation by name; adding one is one line here.
func Ops() map[string]Op {
	return map[string]Op{
		"create":              {"create a pod of kind a (see PodKinds)", drawArgs(0, len(PodKinds())-1), opCreate},
		"delete":              {"delete pod a gracefully (its own grace)", drawArgs(0, 24), opDelete},
		"delete-shorter":      {"delete pod a with 120 s, wait b ms, delete again with c s", drawArgs(0, 24, 0, 20000, 1, 10), opDeleteShorter},
		"delete-force":        {"delete pod a with 120 s, wait b ms, force-delete it", drawArgs(0, 24, 0, 20000), opDeleteForce},
		"update":              {"change pod a's labels", drawArgs(0, 24), opUpdate},
		"create-volumes":      {"create a pod with configMap, secret, kube-api-access and emptyDir volumes, with fsGroup when a=1", drawArgs(0, 1), opCreateVolumes},
		"create-propagation":  {"create a pod whose privileged container mounts an emptyDir with Bidirectional propagation and another with HostToContainer (a: 1 makes the second a hostPath below the root directory)", drawArgs(0, 1), opCreatePropagation},
		"create-missing-vol":  {"create a pod whose configMap (a=0) or secret (a=1) volume names an object that does not exist, with an init container when b=1", drawArgs(0, 1, 0, 1), opCreateMissingVolume},
		"update-config":       {"change the configMap and the secret those pods mount to version a", drawArgs(0, 9), opUpdateConfig},
		"crash":               {"crash the agent, restart it after a ms", drawArgs(0, 5000), opCrash},
		"crash-in-sync":       {"crash the agent just before CRI call a, restart after b ms", drawArgs(0, len(crashPoints)-1, 0, 5000), opCrashInSync},
		"crash-during-outage": {"take the API down, crash the agent, restart it after a ms, bring the API back after b more ms", drawArgs(0, 5000, 0, 10000), opCrashDuringOutage},
		"stale-list":          {"runtime lists answer a ms late", drawArgs(0, 3000), opStaleList},
		"cri-latency":         {"CRI method a takes up to b ms, c calls", drawArgs(0, len(criMethods)-1, 1, 3000, 1, 10), opCRILatency},
		"cri-error":           {"CRI method a fails (code b) c times", drawArgs(0, len(criMethods)-1, 0, len(criCodes)-1, 1, 5), opCRIError},
		"cri-hang":            {"the next call of CRI method a hangs for b ms", drawArgs(0, len(criMethods)-1, 0, 60000), opCRIHang},
		"status-hang":         {"the next container status call hangs for a ms (up to 5 min)", drawArgs(0, 300000), opStatusHang},
		"cri-not-ready":       {"the runtime reports not ready for a ms", drawArgs(0, 30000), opCRINotReady},
		"network-not-ready":   {"the pod network is not ready for a ms", drawArgs(0, 30000), opNetworkNotReady},
		"runtime-restart":     {"the runtime restarts with a ms of downtime", drawArgs(0, 10000), opRuntimeRestart},
		"pull-fail":           {"the next a pulls of busybox fail", drawArgs(1, 3), opPullFail},
		"image-fail":          {"the next a pulls of the flaky image fail (ErrImagePull, ImagePullBackOff)", drawArgs(1, 4), opImageFail},
		"sandbox-no-ip":       {"the next a pod sandboxes get no IP", drawArgs(1, 3), opNoIP},
		"sync-stall":          {"stall the sync loop: its next relist hangs for a ms", drawArgs(0, 60000), opSyncStall},
		"api-conflicts":       {"the next a agent writes conflict", drawArgs(1, 5), opAPIConflicts},
		"api-drop-watches":    {"break every watch", nil, opAPIDropWatches},
		"api-outage":          {"the API is down for a ms", drawArgs(0, 60000), opAPIOutage},
		"api-latency":         {"agent calls of verb a take b ms until the world heals", drawArgs(0, len(apiVerbs)-1, 1, 5000), opAPILatency},
		"api-stale-reads":     {"agent reads lag a ms until the world heals", drawArgs(0, 5000), opAPIStaleReads},
		"api-flaky":           {"a percent of agent calls fail until the world heals", drawArgs(1, 50), opAPIFlaky},
		"api-fail-writes":     {"the next a agent writes fail", drawArgs(1, 5), opAPIFailWrites},
		"api-compact":         {"compact the API's change history", nil, opAPICompact},
		"api-close-watch":     {"the apiserver closes the pod watches at their timeout (not a fault)", nil, opAPICloseWatch},
		"watch-burst":         {"create a pods b ms apart, the apiserver closing the pod watches after the c-th", drawArgs(1, burstMaxPods, 0, burstMaxGap, 0, burstMaxPods), opWatchBurst},
		"manifest":            {"static pod a: remove (b=0) its manifest, write its first version (b=1) or a new one (b=2)", drawArgs(0, len(staticNames)-1, 0, 2), opManifest},
		"manifest-readd":      {"static pod a: remove its manifest and write it back unchanged at once (the same UID)", drawArgs(0, len(staticNames)-1), opManifestReadd},
		"manifest-burst":      {"static pod a: write b new versions of its manifest 100 ms apart (during the graceful termination of the one running)", drawArgs(0, len(staticNames)-1, 2, 8), opManifestBurst},
		"mirror-delete":       {"delete static pod a's mirror pod, with grace 0 or 30 (b)", drawArgs(0, len(staticNames)-1, 0, 1), opMirrorDelete},
		"create-restart-all":  {"create a pod whose container has a RestartAllContainers restart rule (a node feature lockstep does not declare)", nil, opCreateRestartAll},
		"create-apparmor":     {"create a pod asking for AppArmor in way a (see AppArmorPod; the last two ask for nothing) on a host without AppArmor", drawArgs(0, len(appArmorKinds)-1), opCreateAppArmor},
		"create-fqdn":         {"create a pod whose hostname is its FQDN, spec.hostname of a letters (over 64 bytes in all past 36 with cluster.local: no sandbox)", drawArgs(1, 63), opCreateFQDN},
		"create-probed":       {"create a pod with probes drawn from seed a (see DrawProbedPod)", drawArgs(0, 1<<16-1), opCreateProbed},
		"create-pinned":       {"create a Guaranteed pod asking for a whole CPUs (1-5) of shape b (see PinnedPod)", drawArgs(1, 5, 0, 5), opCreatePinned},
		"create-sized":        {"create a pod of QoS class a (Guaranteed, Burstable, BestEffort) and size b (see QOSPod)", drawArgs(0, 2, 0, 63), opCreateQOS},
		"create-storage":      {"create a pod of local-storage kind a (emptyDir sizeLimit, container or pod ephemeral-storage limit, critical) going over (b odd) or staying under its limit after c·5 s", drawArgs(0, len(storageKinds)-1, 0, 1, 0, 3), opCreateStorage},
		"create-qos":          {"create a pod of QoS class a (BestEffort, Burstable, Guaranteed, critical), priority b, usage level c", drawArgs(0, 3, 0, 3, 0, 5), opCreateQoS},
		"create-busy":         {"create a pod whose container app burns a×50m of CPU and logs, beside side burning b×10m", drawArgs(1, 20, 0, 10), opCreateBusy},
		"create-oom":          {"create a pod under restart policy a whose memory grows at rate b past its limit c", drawArgs(0, 2, 0, 2, 0, 2), opCreateOOM},
		"system-oom":          {"the kernel OOM-kills process pid a outside every container", drawArgs(1, 99999), opSystemOOM},
		"node-memory":         {"set the node's memory use outside pods so that level a of available memory is left", drawArgs(0, len(nodeMemoryLevels)-1), opNodeMemory},
		"node-disk":           {"set the node's disk use so that level a of the node filesystem and b of the image filesystem is free", drawArgs(0, len(nodefsLevels)-1, 0, len(imagefsLevels)-1), opNodeDisk},
		"node-pids":           {"set the node's processes outside pods so that level a of the PIDs is free", drawArgs(0, len(pidLevels)-1), opNodePIDs},
		"node-shutdown":       {"the machine announces its shutdown (logind), cancelled a ms later; nothing on a node without graceful shutdown", drawArgs(0, 60000), opNodeShutdown},
		"create-resizable":    {"create a resizable pod with resize policy a (see ResizablePod) at level b", drawArgs(0, 2, 0, 7), opCreateResizable},
		"resize":              {"resize pod a's container to level b (see ResizeLevel) through pods/resize", drawArgs(0, 24, 0, 7), opResize},
		"create-image":        {"create a pod running gc image a, exiting for good after 10 s when b=1", drawArgs(0, 5, 0, 1), opCreateImage},
		"image-disk":          {"set the image filesystem's use outside images and containers to level a", drawArgs(0, len(imageDiskLevels)-1), opImageDisk},
		"create-chatty":       {"create a pod whose container logs a numbered line every 100 ms (a second, quiet container when a=1)", drawArgs(0, 1), opCreateChatty},
		"create-devices":      {"create a pod requesting devices (see DevicePod, n=a)", drawArgs(0, 5), opCreateDevices},
		"plugin-die":          {"the device plugin dies", nil, opPluginDie},
		"plugin-restart":      {"a dead or down device plugin comes back healed and registers again", nil, opPluginRestart},
		"plugin-fail-options": {"the device plugin restarts with GetDevicePluginOptions failing and registers again", nil, opPluginFailOptions},
		"plugin-fail-list":    {"the device plugin's ListAndWatch fails: its open stream ends (a=0), or it restarts and registers again with every stream failing at once (a=1)", drawArgs(0, 1), opPluginFailList},
		"plugin-gone-restart": {"the device plugin dies and stays down past the 5 min grace; the agent crashes and restarts after a ms; a pod requesting devices is created (see DevicePod, n=b)", drawArgs(0, 5000, 0, 5), opPluginGoneRestart},
		"device-health":       {"device a of the plugin turns healthy when b=1, else unhealthy", drawArgs(0, DeviceCount-1, 0, 1), opDeviceHealth},
		"service-put":         {"create or change service a (web, db) of namespace default to cluster IP 10.96.7.b", drawArgs(0, 1, 1, 250), opServicePut},
		"service-delete":      {"delete service a (web, db) of namespace default", drawArgs(0, 1), opServiceDelete},
		"wait":                {"just time passing", nil, func(*run, [3]int) error { return nil }},
	}
}

// drawArgs draws up to three arguments, each in an inclusive range.
func drawArgs(bounds ...int) func(Drawer) [3]int {
	return func(d Drawer) [3]int {
		var a [3]int
		for i := 0; i+1 < len(bounds); i += 2 {
			a[i/2] = d.Int(fmt.Sprintf("arg%d", i/2), bounds[i], bounds[i+1])
		}
		return a
	}
}

// pick reduces a drawn index into [0, n).
func pick(i, n int) int { return ((i % n) + n) % n }

func ms(n int) time.Duration { return time.Duration(max(n, 0)) * time.Millisecond }

// criMethods are the CRI calls latency, error and hang faults aim at.
var criMethods = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers",
	"ContainerStatus", "PullImage", "ImageStatus",
}

// stopPath are the CRI methods whose failures keep the agent from stopping
// a deleted pod's containers (and from seeing that they stopped).
var stopPath = map[string]bool{
	"StopContainer": true, "StopPodSandbox": true, "ListPodSandbox": true, "ListContainers": true,
	"PodSandboxStatus": true, "ContainerStatus": true,
}

// criCodes are the codes injected CRI errors carry.
var criCodes = []codes.Code{codes.Unknown, codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.ResourceExhausted}

// apiVerbs are the verbs API latency aims at.
var apiVerbs = []string{apiserver.VerbGet, apiserver.VerbList, apiserver.VerbWatch, apiserver.VerbCreate,
	apiserver.VerbUpdate, apiserver.VerbPatchStatus, apiserver.VerbDelete}

// victim is the name of created pod i (reduced), or "" if none exists.
func (r *run) victim(i int) string {
	if len(r.created) == 0 {
		return ""
	}
	return r.created[pick(i, len(r.created))]
}

func opCreate(r *run, a [3]int) error {
	kinds := PodKinds()
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, kinds[pick(a[0], len(kinds))](name, r.h.NodeName)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// opCreateProbed creates a pod whose probes and endpoint timelines are
// drawn from the seed a, so that the action alone replays it.
func opCreateProbed(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, DrawProbedPod(SeededDrawer(uint64(a[0])), name, r.h.NodeName)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

func opDelete(r *run, a [3]int) error {
	name := r.victim(a[0])
	if name == "" || r.deleted[name] {
		return nil
	}
	if _, ok := APIPod(r.h, "default", name); !ok {
		return nil
	}
	r.deleted[name] = true
	return ignoreNotFound(r.h.API.User().DeletePodGracefully("default", name, nil))
}

func opDeleteShorter(r *run, a [3]int) error {
	return r.deleteTwice(r.victim(a[0]), ms(a[1]), int64(max(1, a[2])))
}

func opDeleteForce(r *run, a [3]int) error { return r.deleteTwice(r.victim(a[0]), ms(a[1]), 0) }

// deleteTwice deletes pod name with 120 s of grace (unless it is being
// deleted already), lets wait pass, and deletes it again with grace.
func (r *run) deleteTwice(name string, wait time.Duration, grace int64) error {
	if name == "" {
		return nil
	}
	p, ok := APIPod(r.h, "default", name)
	if !ok {
		return nil
	}
	r.deleted[name] = true
	if p.DeletionTimestamp == nil {
		long := int64(120)
		if err := ignoreNotFound(r.h.API.User().DeletePodGracefully("default", name, &long)); err != nil {
			return err
		}
	}
	if err := r.advance(wait); err != nil {
		return err
	}
	if _, ok := APIPod(r.h, "default", name); !ok {
		return nil
	}
	return ignoreNotFound(r.h.API.User().DeletePodGracefully("default", name, &grace))
}

func opUpdate(r *run, a [3]int) error {
	name := r.victim(a[0])
	p, ok := APIPod(r.h, "default", name)
	if name == "" || !ok {
		return nil
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["step"] = fmt.Sprint(r.step)
	_, err := r.h.API.User().UpdatePod(p)
	return ignoreNotFound(err)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func opCrash(r *run, a [3]int) error {
	r.h.CrashAgent()
	r.fault("crash", "downtime", ms(a[0]))
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.StartAgent()
	return nil
}

func opCrashInSync(r *run, a [3]int) error {
	return crashInSync(r, crashPoints[pick(a[0], len(crashPoints))], ms(a[1]))
}

func opCrashDuringOutage(r *run, a [3]int) error {
	r.c.APIDown(ms(a[0]) + ms(a[1]))
	r.h.API.Down(true)
	r.h.CrashAgent()
	r.fault("crash-during-outage", "downtime", ms(a[0]))
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.StartAgent()
	if err := r.advance(ms(a[1])); err != nil {
		return err
	}
	r.h.API.Down(false)
	return nil
}

func opStaleList(r *run, a [3]int) error {
	r.c.RuntimeViewStale(ms(a[0]))
	r.h.Runtime.SetListStaleness(ms(a[0]))
	return nil
}

func opCRILatency(r *run, a [3]int) error {
	m := criMethods[pick(a[0], len(criMethods))]
	r.impaired(m, ms(a[1])*time.Duration(max(1, a[2])))
	if err := r.h.Runtime.InjectLatency(m, 0, ms(a[1]), max(1, a[2])); err != nil {
		return err
	}
	if stopPath[m] {
		// The latency slows calls only as the agent makes them (a stop
		// perhaps long after, when a pod is deleted): a deletion's grace
		// counts from when the last slowed call may have returned.
		r.c.RuntimeSlowWhile(func() bool { return r.h.Runtime.LatencyPending(m) }, ms(a[1]))
	}
	return nil
}

func opCRIError(r *run, a [3]int) error {
	m, code := criMethods[pick(a[0], len(criMethods))], criCodes[pick(a[1], len(criCodes))]
	r.impaired(m, time.Duration(max(1, a[2]))*10*time.Second) // the agent's retries back off
	if err := r.h.Runtime.InjectError(m, status.Errorf(code, "injected %s failure", m), max(1, a[2])); err != nil {
		return err
	}
	if stopPath[m] {
		// The errors fail calls only as the agent makes them (the first
		// perhaps long after, when a pod is deleted), and its retry comes
		// up to a back-off after the last.
		r.c.RuntimeImpairedWhile(func() bool { return r.h.Runtime.ErrorsPending(m) })
	}
	return nil
}

func opCRIHang(r *run, a [3]int) error {
	return r.hangFor(criMethods[pick(a[0], len(criMethods))], ms(a[1]))
}

// hangFor hangs the next call of method for d (or until the agent gives up
// on it), checking the world meanwhile.
func (r *run) hangFor(method string, d time.Duration) error {
	r.impaired(method, d)
	hang := r.h.Runtime.Hang(method, "")
	defer hang.Release()
	return r.advance(d)
}

func opCRINotReady(r *run, a [3]int) error {
	r.c.RuntimeDown(ms(a[0]))
	r.c.RuntimeStalled(ms(a[0]))
	r.h.Runtime.SetRuntimeReady(false)
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.Runtime.SetRuntimeReady(true)
	return nil
}

func opNetworkNotReady(r *run, a [3]int) error {
	r.c.RuntimeDown(ms(a[0]))
	r.h.Runtime.SetNetworkReady(false)
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.Runtime.SetNetworkReady(true)
	return nil
}

// opRuntimeRestart takes the runtime down for a ms. A kill whose
// StopContainer fails meanwhile is retried at the pod worker's next step,
// up to stepRetry after, with the whole grace again (as the kubelet's):
// the runtime is impaired until then.
func opRuntimeRestart(r *run, a [3]int) error {
	r.c.RuntimeDown(ms(a[0]))
	r.c.RuntimeImpaired(addSat(ms(a[0]), stepRetry))
	r.h.Runtime.Restart(ms(a[0]))
	return nil
}

func opPullFail(r *run, a [3]int) error {
	return r.h.Runtime.FailPull("busybox:latest", "registry unavailable", max(1, a[0]))
}

func opNoIP(r *run, a [3]int) error {
	r.h.Runtime.DropSandboxIPs(max(1, a[0]))
	return nil
}

// impaired tells the checker calls of method may fail or lag for d: the
// runtime is impaired, and when method lists, the node may turn NotReady.
func (r *run) impaired(method string, d time.Duration) {
	r.c.RuntimeStalled(d)
	if method == "ListPodSandbox" || method == "ListContainers" {
		r.c.RuntimeDown(d)
	}
}

// opStatusHang hangs one container status call, as a runtime does that
// cannot inspect one container (upstream #94829): the agent bounds the
// relist's refresh of its pod, and the node stays Ready.
func opStatusHang(r *run, a [3]int) error { return r.hangFor("ContainerStatus", ms(a[0])) }

// opSyncStall hangs the next relist (ListPodSandbox) for a while: the
// agent's pod lifecycle events stop, but its lease must stay fresh.
func opSyncStall(r *run, a [3]int) error {
	r.stalls++
	return r.hangFor("ListPodSandbox", ms(a[0]))
}

func opAPIConflicts(r *run, a [3]int) error {
	r.c.APIImpaired(time.Duration(max(1, a[0])) * 10 * time.Second)
	r.h.API.Conflicts(max(1, a[0]))
	r.c.APIImpairedWhile(r.h.API.WriteFaultsPending)
	return nil
}

func opAPIDropWatches(r *run, _ [3]int) error {
	// A watch that had not yet proved healthy (just back from an outage)
	// relists after the back-off it had reached: up to sourceRecovery.
	r.c.APIImpaired(10 * time.Second)
	r.c.RuntimeImpaired(sourceRecovery)
	r.h.API.DropWatches()
	return nil
}

func opAPIOutage(r *run, a [3]int) error {
	r.c.APIDown(ms(a[0]))
	r.h.API.Down(true)
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.API.Down(false)
	return nil
}

func opAPILatency(r *run, a [3]int) error {
	r.c.APIImpaired(forever)
	r.h.API.Latency(apiVerbs[pick(a[0], len(apiVerbs))], ms(a[1]))
	return nil
}

func opAPIStaleReads(r *run, a [3]int) error {
	r.c.APIImpaired(forever)
	r.h.API.StaleReads(ms(a[0]))
	return nil
}

func opAPIFlaky(r *run, a [3]int) error {
	r.c.APIFailing()
	r.h.API.Flaky(min(max(a[0], 1), 100))
	return nil
}

func opAPIFailWrites(r *run, a [3]int) error {
	r.c.APIImpaired(time.Duration(max(1, a[0])) * 10 * time.Second)
	r.h.API.FailWrites(max(1, a[0]), apierrors.NewInternalError(errors.New("injected write failure")))
	r.c.APIImpairedWhile(r.h.API.WriteFaultsPending)
	return nil
}

func opAPICompact(r *run, _ [3]int) error {
	r.c.APIImpaired(10 * time.Second)
	r.h.API.Compact()
	return nil
}

func opManifest(r *run, a [3]int) error {
	name := staticNames[pick(a[0], len(staticNames))]
	if a[1] == 0 {
		r.removeManifest(name)
		return nil
	}
	version := r.step + 1 // an edit
	if a[1] == 1 {
		version = 0 // the same manifest again: a re-add keeps the pod's UID
	}
	r.writeManifest(name, version)
	return nil
}

// opManifestReadd removes a static pod's manifest and writes it back
// unchanged in the same instant, as `rm` then a copy does (upstream's
// "should successfully recreate when file is removed and recreated").
func opManifestReadd(r *run, a [3]int) error {
	name := staticNames[pick(a[0], len(staticNames))]
	version, ok := r.manifests[name]
	if !ok {
		return nil
	}
	r.removeManifest(name)
	r.writeManifest(name, version)
	return nil
}

// opManifestBurst writes b new versions of a static pod's manifest, 100 ms
// apart (upstream's "should update a static pod when the static pod is
// updated multiple times during the graceful termination period").
func opManifestBurst(r *run, a [3]int) error {
	name := staticNames[pick(a[0], len(staticNames))]
	for i := range max(a[1], 1) {
		if i > 0 {
			if err := r.advance(100 * time.Millisecond); err != nil {
				return err
			}
		}
		r.writeManifest(name, (r.step+1)*100+i+1)
	}
	return nil
}

// writeManifest writes version of static pod name's manifest and tells
// the checker.
func (r *run) writeManifest(name string, version int) {
	r.h.Files.WriteFile(r.manifestDir+"/"+name+".yaml", propManifest(name, version))
	r.manifests[name] = version
	r.c.ManifestWritten(name, version)
}

// removeManifest removes static pod name's manifest and tells the checker.
func (r *run) removeManifest(name string) {
	r.h.Files.Remove(r.manifestDir + "/" + name + ".yaml")
	delete(r.manifests, name)
	r.c.ManifestRemoved(name)
}

func opMirrorDelete(r *run, a [3]int) error {
	name := staticNames[pick(a[0], len(staticNames))] + "-" + r.h.NodeName
	grace := int64(0)
	if a[1] != 0 {
		grace = 30
	}
	if _, ok := APIPod(r.h, "kube-system", name); !ok {
		return nil
	}
	return ignoreNotFound(r.h.API.User().DeletePodGracefully("kube-system", name, &grace))
}

// PodKinds are the pods the create operation draws from: every restart
// policy, init containers, sidecars (in a Job-like pod, crashing, two that
// stop after a slow app), several containers, containers that exit, crash,
// grow out of memory or ignore SIGTERM, short and long grace, a container
// restart rule, an active deadline, lifecycle hooks (slow, failing, outliving
// the grace, in the app and two sidecars) and termination messages; then the image pods
// (imagePodKinds).
func PodKinds() []func(name, node string) *corev1.Pod {
	kinds := []func(name, node string) *corev1.Pod{
		func(n, node string) *corev1.Pod { return NewPod(n, node) },
		func(n, node string) *corev1.Pod { return NewPod(n, node, Exits("app", 2*time.Second, 1)) },
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyNever), Exits("app", 3*time.Second, 0))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyOnFailure), Exits("app", time.Second, 2))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyNever), GrowsMemory("app", "10Mi", "20Mi/s", "64Mi"))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Init("setup", time.Second, 0), IgnoresSIGTERM("app"), Grace(5))
		},
		func(n, node string) *corev1.Pod { return NewPod(n, node, IgnoresSIGTERM("app"), Grace(60)) },
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Container("web"), StopsAfter("web", 4*time.Second), Exits("app", 4*time.Second, 1), Grace(10))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyNever), Container("side"), Exits("app", 2*time.Second, 0), Exits("side", 5*time.Second, 1))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyOnFailure), Init("setup", time.Second, 0), Sidecar("proxy"), Exits("app", 3*time.Second, 0))
		},
		func(n, node string) *corev1.Pod { return NewPod(n, node, StopsAfter("app", 3*time.Second), Grace(2)) },
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyNever), Sidecar("proxy"), Exits("app", 3*time.Second, 0))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Sidecar("proxy"), Exits("proxy", 4*time.Second, 1), Sidecar("log"), StopsAfter("app", 2*time.Second), Grace(10))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 42),
				RestartRule("app", corev1.ContainerRestartPolicyNever, corev1.ContainerRestartRuleOnExitCodesOpIn, 42))
		},
		func(n, node string) *corev1.Pod { return NewPod(n, node, ActiveDeadline(8), Container("web")) },
		// Lifecycle hooks: a slow postStart and a preStop that runs in the
		// container; a postStart that always fails (crash loop); a preStop
		// that hangs past a short grace period (abandoned), in the app and in
		// two sidecars, all ignoring SIGTERM.
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, PostStart("app", SleepHook(3*time.Second)), PreStop("app", ExecHook("/bin/drain")), Grace(10))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, PostStart("app", ExecHook("/bin/warmup")), Env("app", "FAKECRI_EXEC", "/bin/warmup=1"),
				PreStop("app", ExecHook("/bin/drain")), Grace(5))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, PreStop("app", ExecHook("/bin/drain")), Env("app", "FAKECRI_EXEC", "/bin/drain=hang"),
				IgnoresSIGTERM("app"), Grace(4), hungSidecar("first"), hungSidecar("second"))
		},
		// Termination messages: from the file, and from the log on error.
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Restart(corev1.RestartPolicyOnFailure), TerminationMessage("app", "done"), MessageFromLogs("app"),
				Env("app", "FAKECRI_LOG", "working"), Exits("app", 2*time.Second, 1))
		},
	}
	return append(kinds, imagePodKinds()...)
}

// hungSidecar adds a sidecar whose preStop hook outlives any grace period
// and that ignores SIGTERM: with the app's own such hook, the pod's kill
// uses up the grace with every container still running, and the sidecars
// are stopped together once it is over (sidecars-stop-together), their
// hooks left to run on (prestop-abandoned-runs-on).
func hungSidecar(name string) PodOption {
	return func(p *corev1.Pod) {
		for _, o := range []PodOption{Sidecar(name), PreStop(name, ExecHook("/bin/drain")), Env(name, "FAKECRI_EXEC", "/bin/drain=hang"), IgnoresSIGTERM(name)} {
			o(p)
		}
	}
}

// Sidecar adds a restartable init container (restartPolicy Always) that
// runs beside the pod's containers.
func Sidecar(name string) PodOption {
	return func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: name, Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: &always,
		})
	}
}

// ensureConfigs creates, once per run, the objects the volume pods read.
func (r *run) ensureConfigs() {
	if r.configs {
		return
	}
	r.configs = true
	putRootCA(r.h)
	putVolumeConfig(r.h, 0)
}

// putVolumeConfig writes version v of the configMap and secret the volume
// pods mount.
func putVolumeConfig(h *harness.Harness, v int) {
	putConfigMap(h, "settings", map[string]string{"mode": fmt.Sprint("v", v), "level": fmt.Sprint(v)})
	h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data: map[string][]byte{"pw": []byte(fmt.Sprint("pw", v))}})
}

func opCreateVolumes(r *run, a [3]int) error {
	r.ensureConfigs()
	name := fmt.Sprintf("p%d", r.step)
	gid := int64(2000)
	opts := []PodOption{kubeAPIAccess,
		WithVolume(configMapVolume("cfg", "settings")), Mounts("app", "cfg", "/etc/app"),
		WithVolume(corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}),
		Mounts("app", "sec", "/sec"),
		WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch"), Mounts("side", "scratch", "/in")}
	if a[0] == 1 {
		opts = append(opts, func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid} })
	}
	if _, err := Create(r.h, NewPod(name, r.h.NodeName, opts...)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

func opCreatePropagation(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	vol := emptyDir("shared")
	if a[0] == 1 {
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		vol = corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: podspec.DefaultRootDir + "/shared-" + name, Type: &dirOrCreate}}}
	}
	if _, err := Create(r.h, NewPod(name, r.h.NodeName, WithVolume(vol),
		MountsPropagated("app", "shared", "/mnt", corev1.MountPropagationBidirectional), Privileged("app"),
		MountsPropagated("side", "shared", "/mnt", corev1.MountPropagationHostToContainer))); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// opCreateMissingVolume creates a pod whose volume source never exists:
// its sync waits for the volume, writing its status (volume-wait-status).
func opCreateMissingVolume(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	vol := configMapVolume("cfg", "absent-"+name)
	if a[0] == 1 {
		vol = corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent-" + name}}}
	}
	opts := []PodOption{WithVolume(vol), Mounts("app", "cfg", "/etc/app")}
	if a[1] == 1 {
		opts = append(opts, Init("setup", time.Second, 0))
	}
	if _, err := Create(r.h, NewPod(name, r.h.NodeName, opts...)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

func opUpdateConfig(r *run, a [3]int) error {
	r.ensureConfigs()
	putVolumeConfig(r.h, a[0]+1)
	return nil
}
