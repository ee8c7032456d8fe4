package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// localVolumeName is the name of a side's copy of the scenario's
// PersistentVolume name (PersistentVolumes are cluster-scoped; each
// side's namespace names its own).
func localVolumeName(ns, name string) string { return ns + "-" + name }

// localVolume is the side's copy of a scenario's local PersistentVolume:
// its own name, its own host directory (created, root's, 0755: what a node
// admin provisions) as the local path, and a node affinity to the side's
// node.
func localVolume(tmpl *v1.PersistentVolume, sd *side, ns string) (*v1.PersistentVolume, error) {
	pv := tmpl.DeepCopy()
	pv.Name = localVolumeName(ns, tmpl.Name)
	dir := filepath.Join(sd.localVolumes, pv.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("host directory of local volume %s: %w", pv.Name, err)
	}
	pv.Spec.Local.Path = dir
	pv.Spec.ClaimRef = nil
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{sd.node}}},
	}}}}
	return pv, nil
}

// createVolumeAndClaim creates the side's copies of the scenario's local
// PersistentVolumes and claims, and binds each claim to its volume as the
// PV controller would (this control plane runs none): the volume's
// claimRef names the claim, both statuses say Bound.
func (h *harness) createVolumeAndClaim(ctx context.Context, s *Scenario, sd *side, ns string) error {
	pvs := h.client.CoreV1().PersistentVolumes()
	for _, o := range s.Objects {
		if o.PersistentVolume == nil {
			continue
		}
		pv, err := localVolume(o.PersistentVolume, sd, ns)
		if err != nil {
			return err
		}
		if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create persistent volume %s: %w", pv.Name, err)
		}
	}
	for _, o := range s.Objects {
		if o.PersistentVolumeClaim == nil {
			continue
		}
		c := o.PersistentVolumeClaim.DeepCopy()
		c.Namespace = ns
		c.Spec.VolumeName = localVolumeName(ns, c.Spec.VolumeName)
		claims := h.client.CoreV1().PersistentVolumeClaims(ns)
		made, err := claims.Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create claim %s/%s: %w", ns, c.Name, err)
		}
		if err := h.bind(ctx, made); err != nil {
			return err
		}
	}
	return nil
}

// bind binds claim c to the volume its spec names, the PV controller's
// way: the volume's claimRef and phase Bound, then the claim's phase,
// access modes and capacity (through the status subresources).
func (h *harness) bind(ctx context.Context, c *v1.PersistentVolumeClaim) error {
	pvs := h.client.CoreV1().PersistentVolumes()
	ref, err := json.Marshal(map[string]any{"spec": map[string]any{"claimRef": map[string]any{
		"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": c.Namespace, "name": c.Name,
		"uid": c.UID, "resourceVersion": c.ResourceVersion}}})
	if err != nil {
		return err
	}
	pv, err := pvs.Patch(ctx, c.Spec.VolumeName, types.MergePatchType, ref, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("bind volume %s to claim %s/%s: %w", c.Spec.VolumeName, c.Namespace, c.Name, err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status Bound of volume %s: %w", pv.Name, err)
	}
	c.Status.Phase = v1.ClaimBound
	c.Status.AccessModes = pv.Spec.AccessModes
	c.Status.Capacity = pv.Spec.Capacity
	if _, err := h.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status Bound of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// deleteVolumesAndClaims removes the side's claims and volumes once its
// pods are gone; their protection finalizers (which only the controller
// manager, not run here, would take off) are dropped first.
func (h *harness) deleteVolumesAndClaims(ctx context.Context, s *Scenario, ns string) error {
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	var errs []error
	for _, o := range s.Objects {
		switch {
		case o.PersistentVolumeClaim != nil:
			claims := h.client.CoreV1().PersistentVolumeClaims(ns)
			name := o.PersistentVolumeClaim.Name
			_, err := claims.Patch(ctx, name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
			if err == nil {
				err = claims.Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete claim %s/%s: %w", ns, name, err))
			}
		case o.PersistentVolume != nil:
			pvs := h.client.CoreV1().PersistentVolumes()
			name := localVolumeName(ns, o.PersistentVolume.Name)
			_, err := pvs.Patch(ctx, name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
			if err == nil {
				err = pvs.Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete volume %s: %w", name, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clean up the volumes of %s: %v", ns, errs)
	}
	return nil
}
