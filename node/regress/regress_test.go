package regress

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTagsPicksTheVariantTags(t *testing.T) {
	settings := []debug.BuildSetting{{Key: "-compiler", Value: "gc"}, {Key: "-tags", Value: "netgo,regress_94829,osusergo"}}
	if diff := cmp.Diff([]string{"regress_94829"}, tags(settings)); diff != "" {
		t.Errorf("regression tags (-want +got):\n%s", diff)
	}
	if got := tags(settings[:1]); got != nil {
		t.Errorf("a build without tags has regression tags %v", got)
	}
}
