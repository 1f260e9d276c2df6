// Command rangefs-conformance checks a mounted tree against the directory it was made from:
// Go's file-system conformance test (testing/fstest.TestFS) over the mount, then every file's
// bytes through the mount against the original's.
//
//	rangefs-conformance MOUNTPOINT ORIGINAL_DIR
//
// It prints one line and exits 0 when both pass; otherwise it prints what failed and exits 1
// (2 for bad arguments or an unreadable original). The comparison runs after a TestFS failure
// too, to say which bytes differ.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rangefs-conformance MOUNTPOINT ORIGINAL_DIR")
		os.Exit(2)
	}
	mountpoint, original := os.Args[1], os.Args[2]

	files, total, err := regularFiles(original)
	if err != nil {
		fmt.Println("FAIL: listing the original:", err)
		os.Exit(2)
	}

	// TestFS also checks that each of these paths is there, besides walking the whole tree.
	conformance := fstest.TestFS(os.DirFS(mountpoint), files...)
	if conformance != nil {
		fmt.Println("FAIL: fstest.TestFS:", shortened(conformance.Error()))
	}

	// TestFS compares the mount with itself (Read against ReadAt against ReadFile); a file read
	// as zeros every time passes it. Only the original can tell. After a TestFS failure this
	// still says where, if anywhere, the bytes the mount now gives differ.
	differing := 0
	for _, name := range files {
		if problem := compare(filepath.Join(mountpoint, name), filepath.Join(original, name)); problem != "" {
			fmt.Printf("FAIL: %s: %s\n", name, problem)
			differing++
		}
	}
	switch {
	case conformance != nil && differing == 0:
		fmt.Printf("(read again after the TestFS failure, all %d files match the originals)\n", len(files))
		os.Exit(1)
	case conformance != nil || differing > 0:
		os.Exit(1)
	}
	fmt.Printf("ok: fstest.TestFS and a byte comparison passed for %d files (%d bytes)\n", len(files), total)
}

// shortened keeps each line of a TestFS report readable: it quotes whole file contents (%q),
// megabytes for a big file.
func shortened(report string) string {
	const limit = 400
	lines := strings.Split(report, "\n")
	for i, line := range lines {
		if len(line) > limit {
			lines[i] = fmt.Sprintf("%s… (%d bytes more)", line[:limit], len(line)-limit)
		}
	}
	return strings.Join(lines, "\n")
}

// regularFiles lists every regular file below root as a slash-separated path relative to it,
// the form an fs.FS takes, with the bytes they hold together.
func regularFiles(root string) ([]string, int64, error) {
	var files []string
	var total int64
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !entry.Type().IsRegular() {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(relative))
		total += info.Size()
		return nil
	})
	return files, total, err
}

// compare reads both files whole and says how the mount's copy differs ("" when it does not):
// the first offset that differs and whether the mount has zeros there, and for how long.
func compare(mounted, original string) string {
	want, err := os.ReadFile(original)
	if err != nil {
		return fmt.Sprintf("reading the original: %v", err)
	}
	got, err := os.ReadFile(mounted)
	if err != nil {
		return fmt.Sprintf("reading through the mount: %v", err)
	}
	if bytes.Equal(got, want) {
		return ""
	}
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	description := fmt.Sprintf("%d bytes through the mount, %d in the original; first difference at offset %d", len(got), len(want), at)
	if at == len(got) || at == len(want) {
		return description + " (one is a prefix of the other)"
	}
	differing := 0
	for i := at; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			differing++
		}
	}
	zeros := 0
	for at+zeros < len(got) && got[at+zeros] == 0 {
		zeros++
	}
	if zeros > 0 {
		description += fmt.Sprintf("; the mount has zeros there: %d bytes of zeros from offset %d to %d", zeros, at, at+zeros)
	} else {
		description += fmt.Sprintf("; the mount has %#02x there where the original has %#02x (not zeros)", got[at], want[at])
	}
	return description + fmt.Sprintf("; %d bytes differ in all", differing)
}
