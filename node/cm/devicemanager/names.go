package devicemanager

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validResourceName reports why name cannot be a device plugin's resource,
// as the kubelet checks it: an extended resource name (a domain-qualified
// name outside the kubernetes.io domain, not starting with "requests.")
// whose quota form "requests.<name>" is a valid qualified name.
func validResourceName(name string) error {
	if !strings.Contains(name, "/") {
		return fmt.Errorf("invalid name of device plugin socket: resource name %q is not an extended resource name: it has no domain prefix", name)
	}
	if strings.Contains(name, "kubernetes.io/") {
		return fmt.Errorf("invalid name of device plugin socket: resource name %q is in the kubernetes.io domain", name)
	}
	if strings.HasPrefix(name, "requests.") {
		return fmt.Errorf("invalid name of device plugin socket: resource name %q starts with \"requests.\"", name)
	}
	if errs := validation.IsQualifiedName("requests." + name); len(errs) > 0 {
		return fmt.Errorf("invalid name of device plugin socket: resource name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}
