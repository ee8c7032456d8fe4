package fakecri

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageStatusUser: an image's user is reported as containerd does, a
// number as Uid and a name as Username (the group cut off), nothing when
// the image names no user; pulled images take theirs from the registry.
func TestImageStatusUser(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Images = []Image{{Ref: "root:1"}, {Ref: "num:1", User: "1000:2000"}, {Ref: "named:1", User: "nobody"}}
		c.Registry = []Image{{Ref: "pulled:1", User: "65534"}}
	})
	if _, err := f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "pulled:1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref      string
		uid      *runtimeapi.Int64Value
		username string
	}{
		{"root:1", nil, ""},
		{"num:1", &runtimeapi.Int64Value{Value: 1000}, ""},
		{"named:1", nil, "nobody"},
		{"pulled:1", &runtimeapi.Int64Value{Value: 65534}, ""},
	}
	for _, tt := range tests {
		st, err := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: tt.ref}, false)
		if err != nil {
			t.Fatal(err)
		}
		got := &runtimeapi.Image{Uid: st.GetImage().GetUid(), Username: st.GetImage().GetUsername()}
		if d := cmp.Diff(&runtimeapi.Image{Uid: tt.uid, Username: tt.username}, got, protocmp.Transform()); d != "" {
			t.Errorf("%s: user (-want +got):\n%s", tt.ref, d)
		}
	}
}

func TestParseRegistryAuth(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    Image
		wantErr bool
	}{
		{spec: "private.example/app:1=alice:s3cret", want: Image{Ref: "private.example/app:1", Size: DefaultPullSize, Inodes: DefaultPullInodes, Username: "alice", Password: "s3cret"}},
		{spec: "private.example/app:1=alice:", want: Image{Ref: "private.example/app:1", Size: DefaultPullSize, Inodes: DefaultPullInodes, Username: "alice"}},
		{spec: "private.example/app:1", wantErr: true},
		{spec: "private.example/app:1=alice", wantErr: true},
		{spec: "private.example/app:1=:pw", wantErr: true},
		{spec: "not a ref=alice:pw", wantErr: true},
	} {
		got, err := ParseRegistryAuth(tc.spec)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseRegistryAuth(%q) error = %v, want error %v", tc.spec, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseRegistryAuth(%q) (-want +got):\n%s", tc.spec, diff)
		}
	}
}
