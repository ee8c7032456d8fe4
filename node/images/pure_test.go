package images

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseReference(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Reference
		wantErr bool
	}{
		{in: "busybox", want: Reference{Domain: "docker.io", Path: "library/busybox"}},
		{in: "busybox:1.36", want: Reference{Domain: "docker.io", Path: "library/busybox", Tag: "1.36"}},
		{in: "user/app:v1", want: Reference{Domain: "docker.io", Path: "user/app", Tag: "v1"}},
		{in: "index.docker.io/user/app", want: Reference{Domain: "docker.io", Path: "user/app"}},
		{in: "localhost:5000/private/busybox:e2e", want: Reference{Domain: "localhost:5000", Path: "private/busybox", Tag: "e2e"}},
		{in: "localhost/app", want: Reference{Domain: "localhost", Path: "app"}},
		{in: "registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			want: Reference{Domain: "registry.example.com", Path: "team/app", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
		{in: "", wantErr: true},
		{in: "Busybox", wantErr: true},
		{in: "busybox:", wantErr: true},
		{in: "busybox@sha256:xyz", wantErr: true},
		{in: "a//b", wantErr: true},
		{in: "UPPER/case", want: Reference{Domain: "UPPER", Path: "case"}},
		{in: "busybox@sha256:0123", wantErr: true},
	} {
		got, err := ParseReference(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseReference(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseReference(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestWithDefaultTag(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                   "busybox:latest",
		"busybox:1.36":                              "busybox:1.36",
		"localhost:5000/app":                        "localhost:5000/app:latest",
		"localhost:5000/app:e2e":                    "localhost:5000/app:e2e",
		"app@sha256:" + sixtyFourHex:                "app@sha256:" + sixtyFourHex,
		"example.com/a/b:v2@sha256:" + sixtyFourHex: "example.com/a/b:v2@sha256:" + sixtyFourHex,
	} {
		got, err := WithDefaultTag(in)
		if err != nil || got != want {
			t.Errorf("WithDefaultTag(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// Upper case names a registry host in the first component ("UPPER/case"
	// is registry UPPER, as for docker), never a repository path.
	if _, err := WithDefaultTag("upper/Case"); err == nil {
		t.Error("WithDefaultTag of an invalid name: no error")
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.PullPolicy
		present bool
		want    Step
	}{
		{corev1.PullAlways, true, Pull},
		{corev1.PullAlways, false, Pull},
		{corev1.PullIfNotPresent, true, UsePresent},
		{corev1.PullIfNotPresent, false, Pull},
		{corev1.PullNever, true, UsePresent},
		{corev1.PullNever, false, NeverPull},
	} {
		if got := Decide(tc.policy, tc.present); got != tc.want {
			t.Errorf("Decide(%s, present=%v) = %s, want %s", tc.policy, tc.present, got, tc.want)
		}
	}
}

func dockerConfigJSON(name, body string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(body)}}
}

func dockercfg(name, body string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: corev1.SecretTypeDockercfg,
		Data: map[string][]byte{corev1.DockerConfigKey: []byte(body)}}
}

func auth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func TestKeyringLookup(t *testing.T) {
	secrets := []*corev1.Secret{
		dockerConfigJSON("reg", `{"auths":{
			"localhost:5000":{"username":"alice","password":"pw1"},
			"https://registry.example.com/v2/":{"auth":"`+auth("bob", "pw:2")+`"},
			"registry.example.com/team":{"username":"carol","password":"pw3"},
			"*.corp.example":{"username":"dave","password":"pw4"},
			"https://index.docker.io/v1/":{"username":"hub","password":"pw5"}}}`),
		dockercfg("old", `{"localhost:5000":{"auth":"`+base64.RawStdEncoding.EncodeToString([]byte("erin:pw6"))+`","email":"e@x"}}`),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"localhost:5000":{"username":"x","password":"y"}}}`)}},
	}
	k, err := KeyringFromSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	alice := Credential{Username: "alice", Password: "pw1", Source: "ns/reg"}
	erin := Credential{Username: "erin", Password: "pw6", Source: "ns/old"}
	bob := Credential{Username: "bob", Password: "pw:2", Source: "ns/reg"}
	carol := Credential{Username: "carol", Password: "pw3", Source: "ns/reg"}
	dave := Credential{Username: "dave", Password: "pw4", Source: "ns/reg"}
	hub := Credential{Username: "hub", Password: "pw5", Source: "ns/reg"}
	for _, tc := range []struct {
		repo string
		want []Credential
	}{
		{"localhost:5000/private/busybox", []Credential{alice, erin}},
		{"localhost:5001/private/busybox", nil},
		// Upstream's Docker Hub test looks only for a '.' or ':' in the
		// first component, so a bare "localhost" falls back to Hub's.
		{"localhost/private/busybox", []Credential{hub}},
		// The more specific key (a path prefix) first, then the host's.
		{"registry.example.com/team/app", []Credential{carol, bob}},
		{"registry.example.com/other/app", []Credential{bob}},
		{"registry.example.com/teamwork/app", []Credential{carol, bob}}, // a string prefix, as upstream
		{"mirror.corp.example/app", []Credential{dave}},
		{"a.b.corp.example/app", nil}, // a glob matches one label
		{"docker.io/library/busybox", []Credential{hub}},
		{"docker.io/user/app", []Credential{hub}},
		{"quay.io/user/app", nil},
	} {
		if diff := cmp.Diff(tc.want, k.Lookup(tc.repo)); diff != "" {
			t.Errorf("Lookup(%q) (-want +got):\n%s", tc.repo, diff)
		}
	}
}

func TestKeyringFromSecretsErrors(t *testing.T) {
	for name, s := range map[string]*corev1.Secret{
		"bad json":      dockerConfigJSON("bad", `{"auths":`),
		"bad auth":      dockerConfigJSON("bad", `{"auths":{"h":{"auth":"!!!"}}}`),
		"auth no colon": dockercfg("bad", `{"h":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}`),
	} {
		if _, err := KeyringFromSecrets([]*corev1.Secret{s}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	k, err := KeyringFromSecrets([]*corev1.Secret{dockerConfigJSON("empty", "")})
	if err != nil || len(k.Lookup("docker.io/library/busybox")) != 0 {
		t.Errorf("empty secret: %v, %v", k, err)
	}
}

func TestRuntimeError(t *testing.T) {
	grpcErr := status.Error(codes.Unknown, "failed to pull and unpack image: 401 Unauthorized")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{grpcErr, "failed to pull and unpack image: 401 Unauthorized"},
		{fmt.Errorf("CRI PullImage %q: %w", "x:v1", grpcErr), "failed to pull and unpack image: 401 Unauthorized"},
		{status.Error(codes.NotFound, "x:v1: not found"), "rpc error: code = NotFound desc = x:v1: not found"},
		{errors.New("plain"), "plain"},
	} {
		if got := runtimeError(tc.err); got != tc.want {
			t.Errorf("runtimeError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestEventMessages(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{PresentMessage("busybox"), `Container image "busybox" already present on machine and can be accessed by the pod`},
		{MissingSecretsMessage([]string{"nosuch"}), "Unable to retrieve some image pull secrets (nosuch); attempting to pull the image may not succeed."},
		{MissingSecretsMessage([]string{"a", "b"}), "Unable to retrieve some image pull secrets (a, b); attempting to pull the image may not succeed."},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}

func TestPulledMessage(t *testing.T) {
	got := PulledMessage("busybox:latest", 2*time.Second+1234567*time.Nanosecond, 7*time.Second+999999*time.Nanosecond, 2166802)
	want := `Successfully pulled image "busybox:latest" in 2.001s (7s including waiting). Image size: 2166802 bytes.`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRepositoryOf(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                             "busybox",
		"busybox:1.36":                        "busybox",
		"registry.example/private:1":          "registry.example/private",
		"localhost:5000/app":                  "localhost:5000/app",
		"localhost:5000/app:v1":               "localhost:5000/app",
		"busybox@sha256:" + sha256Zeroes:      "busybox",
		"busybox:1.36@sha256:" + sha256Zeroes: "busybox",
	} {
		if got := repositoryOf(in); got != want {
			t.Errorf("repositoryOf(%q) = %q, want %q", in, got, want)
		}
	}
}

const sha256Zeroes = "0000000000000000000000000000000000000000000000000000000000000000"
