package status

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Patch returns the strategic-merge patch of a pod's status
// subresource that turns old, the status the API holds, into next, with
// metadata.uid set to uid as the write's precondition (a pod recreated
// under the same name refuses it). unchanged reports that the patch would
// change nothing but carry the precondition.
func Patch(uid types.UID, old, next corev1.PodStatus) (patch []byte, unchanged bool, err error) {
	before, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, false, fmt.Errorf("status patch of pod %s: encode the API's status: %w", uid, err)
	}
	// Only the UID is set in the new object's metadata, so that it is the
	// one metadata field of the patch.
	after, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: next})
	if err != nil {
		return nil, false, fmt.Errorf("status patch of pod %s: encode the new status: %w", uid, err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(before, after, corev1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("status patch of pod %s: %w", uid, err)
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}
