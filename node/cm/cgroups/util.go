package cgroups

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// sortedUIDs returns m's keys in order, so removals happen in a stable
// order.
func sortedUIDs(m map[types.UID]string) []types.UID {
	return slices.Sorted(maps.Keys(m))
}
