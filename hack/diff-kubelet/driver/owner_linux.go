package main

import (
	"fmt"
	"os"
	"syscall"
)

// ownerOf is a file's uid:gid.
func ownerOf(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	}
	return "?"
}
