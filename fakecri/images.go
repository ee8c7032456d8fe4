package fakecri

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// image is an image present on the node.
type image struct {
	id          string // "sha256:<64 hex>"
	repoTags    []string
	repoDigests []string
	size        uint64
	inodes      uint64
	pinned      bool
	user        string
	seq         uint64
}

// imageStore holds the node's images, guarded by Runtime.mu.
type imageStore struct {
	byID     map[string]*image
	byRef    map[string]*image // normalized tag or digest reference → image
	order    []*image          // in the order they arrived
	registry map[string]Image  // sizes of pullable images, by normalized ref
	pulls    []Pull            // every pull attempt, in order
	removals []Removal         // every image RemoveImage removed, in order
	size     uint64            // sum of image sizes
	inodes   uint64            // sum of image inodes
	seq      uint64
	// gen counts the images' arrivals and removals (TrueImagesView).
	gen uint64
}

// init makes the maps.
func (s *imageStore) init() {
	s.byID = map[string]*image{}
	s.byRef = map[string]*image{}
	s.registry = map[string]Image{}
}

// digestOf is a deterministic sha256 digest of a kind and a name.
func digestOf(kind, name string) string {
	sum := sha256.Sum256([]byte("fakecri/" + kind + "/" + name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// add makes the image named by the normalized ref present and returns it.
func (s *imageStore) add(ref string, spec Image) *image {
	if img, ok := s.byRef[ref]; ok {
		return img
	}
	repo, tag, digest := splitRef(ref)
	s.seq++
	img := &image{id: digestOf("config", ref), size: spec.Size, inodes: spec.Inodes, pinned: spec.Pinned, user: spec.User, seq: s.seq}
	s.byID[img.id] = img
	s.gen++
	s.order = append(s.order, img)
	s.size = addSatU(s.size, img.size)
	s.inodes = addSatU(s.inodes, img.inodes)
	if tag != "" {
		img.repoTags = []string{ref}
		d := repo + "@" + digestOf("manifest", ref)
		img.repoDigests = []string{d}
		s.byRef[d] = img
	} else {
		img.repoDigests = []string{repo + "@" + digest}
	}
	s.byRef[ref] = img
	return img
}

// remove deletes img and all its references.
func (s *imageStore) remove(img *image) {
	for _, ref := range img.repoTags {
		delete(s.byRef, ref)
	}
	for _, ref := range img.repoDigests {
		delete(s.byRef, ref)
	}
	delete(s.byID, img.id)
	s.gen++
	s.order = slices.DeleteFunc(s.order, func(o *image) bool { return o == img })
	s.size -= img.size
	s.inodes -= img.inodes
}

// resolve finds a present image by ID or reference.
func (s *imageStore) resolve(ref string) (*image, error) {
	if img, ok := s.byID[ref]; ok {
		return img, nil
	}
	if img, ok := s.byID["sha256:"+ref]; ok {
		return img, nil
	}
	n, err := normalizeRef(ref)
	if err != nil {
		return nil, err
	}
	if img, ok := s.byRef[n]; ok {
		return img, nil
	}
	return nil, fmt.Errorf("image %q not found", ref)
}

// normalizeRef turns an image reference into containerd's canonical form
// (its ParseDockerRef): "busybox" → "docker.io/library/busybox:latest";
// a reference with a digest keeps the digest only.
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	if canonical, ok := named.(reference.Canonical); ok {
		return canonical.Name() + "@" + canonical.Digest().String(), nil
	}
	return reference.TagNameOnly(named).String(), nil
}

// splitRef splits a normalized ref into repository, tag and digest.
func splitRef(ref string) (repo, tag, digest string) {
	if r, d, ok := strings.Cut(ref, "@"); ok {
		return r, "", d
	}
	i := strings.LastIndexByte(ref, ':')
	return ref[:i], ref[i+1:], ""
}

// criImage builds the CRI view of img.
func criImage(img *image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    slices.Clone(img.repoTags),
		RepoDigests: slices.Clone(img.repoDigests),
		Size:        img.size,
		Spec:        &runtimeapi.ImageSpec{Image: img.id},
		Pinned:      img.pinned,
	}
	user, _, _ := strings.Cut(img.user, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		out.Uid = &runtimeapi.Int64Value{Value: uid}
	} else {
		out.Username = user
	}
	return out
}

// ListImages lists images in the order they arrived, optionally only the
// one a filter names.
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	if err := r.enter(ctx, "ListImages", callTarget{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.unlock()
	out := []*runtimeapi.Image{}
	if ref := filter.GetImage().GetImage(); ref != "" {
		if img, err := r.images.resolve(ref); err == nil {
			out = append(out, criImage(img))
		}
		return out, nil
	}
	for _, img := range r.images.order {
		out = append(out, criImage(img))
	}
	return out, nil
}

// ImageStatus returns an image's status, or a response without an image
// when it is not present (not an error, per CRI).
func (r *Runtime) ImageStatus(ctx context.Context, spec *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.enter(ctx, "ImageStatus", callTarget{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.unlock()
	img, err := r.images.resolve(spec.GetImage())
	if err != nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	resp := &runtimeapi.ImageStatusResponse{Image: criImage(img)}
	if verbose {
		resp.Info = map[string]string{"info": mustJSON(map[string]any{"id": img.id, "size": img.size, "inodes": img.inodes})}
	}
	return resp, nil
}

// Pull is one PullImage call as the registry saw it.
type Pull struct {
	// Ref is the normalized reference pulled.
	Ref string
	// PodUID is the pod of the sandbox config given ("" without one).
	PodUID string
	// Username and Password are the AuthConfig's ("" without one).
	Username, Password string
	// Start and End are when the call came in (before any injected
	// latency or hang) and when the pull ended.
	Start, End time.Time
	// Err is the pull's error, "" when it succeeded.
	Err string
}

// PullImage "pulls" an image: it takes the image's PullLatency, else
// Config.PullLatency (through Clock.Sleep), then the image is present and
// its ID returned, unless a FailPull fault makes it fail like a registry
// error or the registry requires credentials that auth does not carry
// (see Image.Username). Every call is recorded (Pulls).
func (r *Runtime) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := r.clock.Now()
	if err := r.enter(ctx, "PullImage", callTarget{podUID: podUIDOf(podSandboxConfig)}); err != nil {
		return "", err
	}
	ref, err := normalizeRef(spec.GetImage())
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "failed to pull image: %v", err)
	}
	rec := Pull{Ref: ref, PodUID: podUIDOf(podSandboxConfig), Username: auth.GetUsername(), Password: auth.GetPassword(), Start: start}
	r.mu.Lock()
	latency := r.cfg.PullLatency
	if d, ok := r.images.registry[ref]; ok && d.PullLatency > 0 {
		latency = d.PullLatency
	}
	r.unlock()
	if latency > 0 {
		r.clock.Sleep(latency)
	}
	r.mu.Lock()
	defer r.unlock()
	id, err := r.pullLocked(ref, auth)
	rec.End = r.clock.Now()
	if err != nil {
		rec.Err = err.Error()
	}
	r.images.pulls = append(r.images.pulls, rec)
	return id, err
}

// pullLocked ends a pull of ref, with r.mu held.
func (r *Runtime) pullLocked(ref string, auth *runtimeapi.AuthConfig) (string, error) {
	if err := r.faults.pullFailure(ref); err != nil {
		return "", err
	}
	desc, ok := r.images.registry[ref]
	if !ok {
		desc = Image{Size: DefaultPullSize, Inodes: DefaultPullInodes}
	}
	if desc.Username != "" || desc.Password != "" {
		if auth.GetUsername() != desc.Username || auth.GetPassword() != desc.Password {
			repo, tag, _ := splitRef(ref)
			host, _, _ := strings.Cut(repo, "/")
			return "", status.Errorf(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference %q: pulling from host %s failed with status code [manifests %s]: 401 Unauthorized",
				ref, ref, host, tag)
		}
	}
	return r.images.add(ref, desc).id, nil
}

// Pulls returns every PullImage call that reached the registry, in order.
func (r *Runtime) Pulls() []Pull {
	r.mu.Lock()
	defer r.unlock()
	return slices.Clone(r.images.pulls)
}

// SetRegistryImage adds or replaces an image of the registry (what
// Config.Registry lists): a test makes an image appear, or requires
// credentials for it, while the run goes on.
func (r *Runtime) SetRegistryImage(img Image) error {
	ref, err := normalizeRef(img.Ref)
	if err != nil {
		return fmt.Errorf("fakecri: SetRegistryImage: %w", err)
	}
	r.mu.Lock()
	defer r.unlock()
	r.images.registry[ref] = img
	return nil
}

// RemoveImage removes an image and all its references. Like containerd it
// does not check whether containers use it (they keep running). Removing
// an absent image succeeds.
func (r *Runtime) RemoveImage(ctx context.Context, spec *runtimeapi.ImageSpec) error {
	if err := r.enter(ctx, "RemoveImage", callTarget{}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.unlock()
	img, err := r.images.resolve(spec.GetImage())
	if err != nil {
		return nil
	}
	rec := Removal{At: time.Unix(0, r.now()), ID: img.id, Tags: slices.Clone(img.repoTags), Pinned: img.pinned}
	for _, id := range slices.Sorted(maps.Keys(r.containers)) {
		if c := r.containers[id]; c.imageID == img.id {
			rec.UsedBy = append(rec.UsedBy, ImageUser{ContainerID: id, CreatedAt: time.Unix(0, c.createdAt)})
		}
	}
	r.images.removals = append(r.images.removals, rec)
	r.images.remove(img)
	return nil
}

// Removal is an image RemoveImage removed.
type Removal struct {
	// At is when it was removed.
	At time.Time
	// ID, Tags and Pinned describe the image.
	ID     string
	Tags   []string
	Pinned bool
	// UsedBy are the containers (of any state) that used it then.
	UsedBy []ImageUser
}

// ImageUser is a container that used an image.
type ImageUser struct {
	ContainerID string
	CreatedAt   time.Time
}

// Removals lists the images RemoveImage removed, in order.
func (r *Runtime) Removals() []Removal {
	r.mu.Lock()
	defer r.unlock()
	return slices.Clone(r.images.removals)
}

// ImageFsInfo reports the imagefs (containerd's snapshotter) usage: base +
// images + containers' writable layers, consistent with NodeUsage.
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	now, err := r.begin(ctx, "ImageFsInfo", callTarget{})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	u := r.nodeUsage(now)
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems: []*runtimeapi.FilesystemUsage{{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.cfg.ImagefsMountpoint},
			UsedBytes:  u64(u.Imagefs.Used),
			InodesUsed: u64(u.Imagefs.InodesUsed),
		}},
	}, nil
}

// ParseImage parses an image given as "ref" or "ref=size" (size a byte
// quantity such as 7Mi), as the --image flag of `lockstep fakecri` takes it.
func ParseImage(spec string) (Image, error) {
	ref, size, hasSize := strings.Cut(spec, "=")
	if _, err := normalizeRef(ref); err != nil {
		return Image{}, err
	}
	img := Image{Ref: ref, Size: DefaultPullSize, Inodes: DefaultPullInodes}
	if hasSize {
		n, err := parseBytes(size)
		if err != nil {
			return Image{}, fmt.Errorf("image %q: size %q: %w", ref, size, err)
		}
		img.Size = n
	}
	return img, nil
}

// ParseRegistryAuth parses a `--registry-auth` value, ref=user:password:
// a registry image whose pulls need that AuthConfig (as SetRegistryImage
// with Username and Password), for pull-secret scenarios.
func ParseRegistryAuth(spec string) (Image, error) {
	ref, cred, ok := strings.Cut(spec, "=")
	user, pass, hasPass := strings.Cut(cred, ":")
	if !ok || !hasPass || user == "" {
		return Image{}, fmt.Errorf("registry auth %q: want ref=user:password", spec)
	}
	if _, err := normalizeRef(ref); err != nil {
		return Image{}, fmt.Errorf("registry auth %q: %w", spec, err)
	}
	return Image{Ref: ref, Size: DefaultPullSize, Inodes: DefaultPullInodes, Username: user, Password: pass}, nil
}
