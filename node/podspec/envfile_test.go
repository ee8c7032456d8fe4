package podspec

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestParseEnvFile: the kubelet v1.37 env file format (its util/env
// ParseEnv), case by case.
func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name, content, key, want, wantErr string
	}{
		{"quoted", "KEY='value-from-file'\n", "KEY", "value-from-file", ""},
		{"other keys, comments, blanks", "# c\n\n  A='1'\nKEY='two words' # note\n", "KEY", "two words", ""},
		{"multi-line", "KEY='a\nb'\n", "KEY", "a\nb", ""},
		{"missing key", "A='1'\n", "KEY", "", ""},
		{"blank after =: empty", "KEY= 'x'\n", "KEY", "", ""},
		{"unquoted", "KEY=value\n", "KEY", "", "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{"no =", "KEY\n", "KEY", "", "invalid environment variable format at line 1: missing '='"},
		{"blank before =", "KEY ='x'\n", "KEY", "", "invalid environment variable format at line 1: whitespace before '=' is not allowed"},
		{"empty name", "='x'\n", "KEY", "", "invalid environment variable format at line 1: empty variable name"},
		{"after the quote", "KEY='x' y\n", "KEY", "", "invalid environment variable format at line 1: unexpected content after closing quote"},
		{"unclosed", "A='1'\nKEY='x\n", "KEY", "", "invalid environment variable format starting at line 2: unclosed single quote"},
		{"bad line after the key is not read", "KEY='x'\nbad\n", "KEY", "x", ""},
		{"bad line before the key", "bad\nKEY='x'\n", "KEY", "", "invalid environment variable format at line 1: missing '='"},
	}
	for _, tt := range tests {
		got, err := ParseEnvFile([]byte(tt.content), tt.key)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
			t.Errorf("%s: got %q, %v; want %q, %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestFileKeyRefEnv: a fileKeyRef resolves from the file read for it,
// and fails with the kubelet's words otherwise.
func TestFileKeyRefEnv(t *testing.T) {
	optional := true
	ref := func(key string, opt *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
			VolumeName: "config", Path: "env", Key: key, Optional: opt}}}
	}
	file := func(data string, err error) map[string]EnvFile {
		return map[string]EnvFile{EnvFileKey("config", "env"): {Path: "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/config/env", Data: []byte(data), Err: err}}
	}
	tests := []struct {
		name     string
		env      corev1.EnvVar
		files    map[string]EnvFile
		want     string // the value of V ("-" for none)
		wantUser string
	}{
		{"read", ref("KEY", nil), file("KEY='v'\n", nil), "v", ""},
		{"optional missing key", ref("NOPE", &optional), file("KEY='v'\n", nil), "-", ""},
		{"missing key", ref("NOPE", nil), file("KEY='v'\n", nil), "", `environment variable key "NOPE" not found in file "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/config/env"`},
		{"empty value is missing", ref("KEY", nil), file("KEY=''\n", nil), "", `environment variable key "KEY" not found in file "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/config/env"`},
		{"unparsable", ref("KEY", nil), file("KEY=v\n", nil), "", "couldn't parse env file"},
		{"unreadable", ref("KEY", &optional), file("", errors.New("no such file")), "", "couldn't parse env file"},
		{"no volume", ref("KEY", nil), nil, "", `cannot find the volume "config" referenced by FileKeyRef`},
	}
	for _, tt := range tests {
		pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{tt.env} })
		env, _, err := environment(pod, &pod.Spec.Containers[0], nil, testNode(), ContainerOptions{EnvFiles: tt.files})
		if tt.wantUser != "" {
			if err == nil || UserMessage(err) != tt.wantUser {
				t.Errorf("%s: err %v (user message %q), want %q", tt.name, err, UserMessage(err), tt.wantUser)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := "-"
		for _, e := range env {
			if e.name == "V" {
				got = e.value
			}
		}
		if got != tt.want {
			t.Errorf("%s: V = %q, want %q", tt.name, got, tt.want)
		}
	}
}
