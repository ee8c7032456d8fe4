package nodestatus

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// statusPatch returns the strategic-merge patch of the node's status
// subresource that turns old, the status as last written, into next. The
// conditions are always sent whole: the node is not watched, and the node
// controller rewrites them (Ready Unknown when the lease lapses), so a
// difference against the last written conditions could miss what must be
// set again. Addresses, which the API merges by type although a node may
// have two of one type, replace the API's list when they changed.
func statusPatch(name string, old, next corev1.NodeStatus) ([]byte, error) {
	base := *old.DeepCopy()
	base.Conditions = nil
	replaceAddresses := len(old.Addresses) > 0 && !equality.Semantic.DeepEqual(old.Addresses, next.Addresses)
	diff := *next.DeepCopy()
	if replaceAddresses {
		diff.Addresses = base.Addresses
	}
	before, err := json.Marshal(corev1.Node{Status: base})
	if err != nil {
		return nil, fmt.Errorf("status patch of node %q: encode the written status: %w", name, err)
	}
	after, err := json.Marshal(corev1.Node{Status: diff})
	if err != nil {
		return nil, fmt.Errorf("status patch of node %q: encode the new status: %w", name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("status patch of node %q: %w", name, err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	return withReplacedAddresses(name, patch, next.Addresses)
}

// withReplacedAddresses sets status.addresses in patch to a list that
// replaces the API's whole list with addrs.
func withReplacedAddresses(name string, patch []byte, addrs []corev1.NodeAddress) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("status patch of node %q: %w", name, err)
	}
	status, _ := p["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		p["status"] = status
	}
	list := []any{map[string]any{"$patch": "replace"}}
	for _, a := range addrs {
		list = append(list, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = list
	delete(status, "$setElementOrder/addresses")
	out, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("status patch of node %q: %w", name, err)
	}
	return out, nil
}
