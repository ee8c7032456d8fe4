package daemon

import (
	"strings"
	"testing"
)

// kubeletConfig is a KubeletConfiguration file holding fields (YAML).
func kubeletConfig(fields string) []byte {
	return []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + strings.TrimPrefix(fields, "\n"))
}

// applyConfig parses fields as the config file at path and applies it to
// the defaults after flags edited them: the flags named in set win over
// the file. It returns the options and the fields the file ignored.
func applyConfig(t *testing.T, path, fields string, flags func(*Options), set ...string) (Options, []string) {
	t.Helper()
	cf, err := ParseConfigFile(path, kubeletConfig(fields))
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	if flags != nil {
		flags(&o)
	}
	cf.Apply(&o, func(flag string) bool {
		for _, s := range set {
			if s == flag {
				return true
			}
		}
		return false
	})
	return o, cf.Ignored
}

// checkValidate validates the defaults after edit: want "" expects no
// error, else an error containing want.
func checkValidate(t *testing.T, edit func(*Options), want string) {
	t.Helper()
	o := Defaults()
	edit(&o)
	err := o.Validate()
	if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}
