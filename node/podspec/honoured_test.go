package podspec

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
)

// jsonNames are the JSON names of a struct type's fields, in order.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// setFields are the JSON names of v's non-zero fields.
func setFields(v any) []string {
	rv := reflect.ValueOf(v).Elem()
	names := jsonNames(rv.Type())
	var out []string
	for i := range rv.NumField() {
		if !rv.Field(i).IsZero() {
			out = append(out, names[i])
		}
	}
	return out
}

// configsOf renders what podspec gives the pod's first container: the
// sandbox config, the container config and their errors.
type configsOf struct {
	sandbox, container proto.Message
	errs               string
}

func configs(pod *corev1.Pod) configsOf {
	var out configsOf
	sb, err := SandboxConfig(pod, 0, testNode(), "")
	if err != nil {
		out.errs += "sandbox: " + err.Error()
	}
	cfg, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{ImageUser: ImageUser{}}, testNode())
	if err != nil {
		out.errs += "container: " + err.Error()
	}
	out.sandbox, out.container = sb, cfg
	return out
}

func (c configsOf) equal(o configsOf) bool {
	return c.errs == o.errs && proto.Equal(c.sandbox, o.sandbox) && proto.Equal(c.container, o.container)
}

// TestHonouredSecurityFieldsChangeTheConfigs: each field podspec says it
// honours is a field of the security context, and setting it alone (to a
// value other than the default) changes the sandbox or container config
// podspec makes, or makes it fail; the lists and the table agree.
func TestHonouredSecurityFieldsChangeTheConfigs(t *testing.T) {
	id := int64(1234)
	yes, no := true, false
	strict := corev1.SupplementalGroupsPolicyStrict
	unmasked := corev1.UnmaskedProcMount
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	appArmor := &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	selinux := &corev1.SELinuxOptions{Level: "s0:c1"}
	pod := map[string]func(*corev1.PodSecurityContext){
		"seLinuxOptions":           func(s *corev1.PodSecurityContext) { s.SELinuxOptions = selinux },
		"runAsUser":                func(s *corev1.PodSecurityContext) { s.RunAsUser = &id },
		"runAsGroup":               func(s *corev1.PodSecurityContext) { s.RunAsGroup = &id },
		"runAsNonRoot":             func(s *corev1.PodSecurityContext) { s.RunAsNonRoot = &yes },
		"supplementalGroups":       func(s *corev1.PodSecurityContext) { s.SupplementalGroups = []int64{id} },
		"supplementalGroupsPolicy": func(s *corev1.PodSecurityContext) { s.SupplementalGroupsPolicy = &strict },
		"fsGroup":                  func(s *corev1.PodSecurityContext) { s.FSGroup = &id },
		"sysctls": func(s *corev1.PodSecurityContext) {
			s.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		},
		"seccompProfile":  func(s *corev1.PodSecurityContext) { s.SeccompProfile = runtimeDefault },
		"appArmorProfile": func(s *corev1.PodSecurityContext) { s.AppArmorProfile = appArmor },
	}
	container := map[string]func(*corev1.SecurityContext){
		"capabilities": func(s *corev1.SecurityContext) {
			s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}
		},
		"privileged":               func(s *corev1.SecurityContext) { s.Privileged = &yes },
		"seLinuxOptions":           func(s *corev1.SecurityContext) { s.SELinuxOptions = selinux },
		"runAsUser":                func(s *corev1.SecurityContext) { s.RunAsUser = &id },
		"runAsGroup":               func(s *corev1.SecurityContext) { s.RunAsGroup = &id },
		"runAsNonRoot":             func(s *corev1.SecurityContext) { s.RunAsNonRoot = &yes },
		"readOnlyRootFilesystem":   func(s *corev1.SecurityContext) { s.ReadOnlyRootFilesystem = &yes },
		"allowPrivilegeEscalation": func(s *corev1.SecurityContext) { s.AllowPrivilegeEscalation = &no },
		"procMount":                func(s *corev1.SecurityContext) { s.ProcMount = &unmasked },
		"seccompProfile":           func(s *corev1.SecurityContext) { s.SeccompProfile = runtimeDefault },
		"appArmorProfile":          func(s *corev1.SecurityContext) { s.AppArmorProfile = appArmor },
	}
	for _, list := range []struct {
		what     string
		honoured []string
		table    []string
		fields   []string
	}{
		{"pod", HonouredPodSecurityFields(), slices.Sorted(maps.Keys(pod)), jsonNames(reflect.TypeFor[corev1.PodSecurityContext]())},
		{"container", HonouredContainerSecurityFields(), slices.Sorted(maps.Keys(container)), jsonNames(reflect.TypeFor[corev1.SecurityContext]())},
	} {
		if got := slices.Sorted(slices.Values(list.honoured)); !slices.Equal(got, list.table) {
			t.Errorf("%s: honoured fields %v, but the table proves %v", list.what, got, list.table)
		}
		for _, name := range list.honoured {
			if !slices.Contains(list.fields, name) {
				t.Errorf("%s: honoured field %q is not a field of the security context %v", list.what, name, list.fields)
			}
		}
	}
	base := configs(testPod())
	for name, set := range pod {
		t.Run("pod "+name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} })
			set(p.Spec.SecurityContext)
			if got := setFields(p.Spec.SecurityContext); !slices.Equal(got, []string{name}) {
				t.Fatalf("the table's %s sets %v", name, got)
			}
			if configs(p).equal(base) {
				t.Errorf("setting the pod's securityContext.%s changes no config", name)
			}
		})
	}
	for name, set := range container {
		t.Run("container "+name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{} })
			set(p.Spec.Containers[0].SecurityContext)
			if got := setFields(p.Spec.Containers[0].SecurityContext); !slices.Equal(got, []string{name}) {
				t.Fatalf("the table's %s sets %v", name, got)
			}
			if configs(p).equal(base) {
				t.Errorf("setting the container's securityContext.%s changes no config", name)
			}
		})
	}
}
