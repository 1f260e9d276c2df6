// Command rangefs-stress reads the files of a mount at random from several workers at once and
// compares every byte with the original, to catch a wrong byte served in a race: above all a
// handle opened right after another one of the same file closed, while the file is completed,
// promoted and handed to the kernel.
//
//	rangefs-stress MOUNTPOINT ORIGINAL_DIR SECONDS WORKERS SEED
//
// Every regular file below ORIGINAL_DIR is loaded into memory once and read through the mount
// under the same relative path. Each worker loops until SECONDS have passed: it picks a file,
// opens it, sometimes drops its page cache, makes 1 to 8 reads of random kinds, compares every
// byte, closes it, and often opens the same file again at once. Sometimes it reads the file
// whole with os.ReadFile instead, and half of those times opens it again at once after that.
//
// A worker's choices follow from SEED, so a failure can be run again with the same choices
// (the timing between workers differs from run to run).
//
// The first wrong byte, short read, error or stuck read is printed and ends the program with
// exit status 1; otherwise it prints its totals and exits 0.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RangeFS fetches and caches files in blocks of this size; races live at their edges.
const blockSize = 256 << 10

// No read on a loopback server takes anywhere near this; past it the mount is stuck.
const stuckAfter = 60 * time.Second

type original struct {
	rel  string
	data []byte
}

type readKind int

const (
	small readKind = iota
	medium
	large
	boundary
	tail
	readAllFrom
	sequential
	kindCount
)

var kindNames = [...]string{"small", "medium", "large", "block boundary", "end of file", "ReadAll from an offset", "sequential run"}

func (k readKind) String() string { return kindNames[k] }

type totals struct {
	opens, reopens, wholeFiles, reads, bytesCompared atomic.Int64
	byKind                                           [kindCount]atomic.Int64
}

var (
	started  time.Time
	counts   totals
	failOnce sync.Once
	rerun    string
)

// fail prints the first failure and ends the program; other workers never get past it.
func fail(format string, args ...any) {
	failOnce.Do(func() {
		fmt.Printf("FAIL "+format+"\n", args...)
		fmt.Printf("rerun with the same choices: %s\n", rerun)
		os.Exit(1)
	})
	select {}
}

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: rangefs-stress MOUNTPOINT ORIGINAL_DIR SECONDS WORKERS SEED")
		os.Exit(2)
	}
	mountpoint, originalDir := os.Args[1], os.Args[2]
	seconds, err1 := strconv.ParseFloat(os.Args[3], 64)
	workers, err2 := strconv.Atoi(os.Args[4])
	seed, err3 := strconv.ParseInt(os.Args[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || seconds <= 0 || workers <= 0 {
		fmt.Fprintf(os.Stderr, "bad SECONDS, WORKERS or SEED: %q %q %q\n", os.Args[3], os.Args[4], os.Args[5])
		os.Exit(2)
	}
	rerun = strings.Join(os.Args, " ")

	files, err := loadOriginals(originalDir)
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "cannot load the originals from %s: %v (%d files)\n", originalDir, err, len(files))
		os.Exit(2)
	}

	started = time.Now()
	deadline := started.Add(time.Duration(seconds * float64(time.Second)))
	all := make([]*worker, workers)
	var done sync.WaitGroup
	for i := range all {
		all[i] = &worker{id: i, mountpoint: mountpoint, files: files,
			rng: rand.New(rand.NewSource(seed*1_000_003 + int64(i)))}
		done.Add(1)
		go func(w *worker) {
			defer done.Done()
			w.run(deadline)
		}(all[i])
	}
	go watch(all)
	done.Wait()

	var kinds []string
	for k := readKind(0); k < kindCount; k++ {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, counts.byKind[k].Load()))
	}
	fmt.Printf("ok: %d workers for %.1f s (seed %d) over %d files: %d opens (%d right after a close of the same file), "+
		"%d whole-file reads (os.ReadFile), %d reads, %d bytes compared\n",
		workers, time.Since(started).Seconds(), seed, len(files), counts.opens.Load(), counts.reopens.Load(),
		counts.wholeFiles.Load(), counts.reads.Load(), counts.bytesCompared.Load())
	fmt.Printf("reads by kind: %s\n", strings.Join(kinds, ", "))
}

func loadOriginals(dir string) ([]original, error) {
	var files []original
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || !entry.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files = append(files, original{rel: rel, data: data})
		return err
	})
	// WalkDir's order is already lexical; sorted anyway so a seed means the same choices.
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

type worker struct {
	id         int
	mountpoint string
	files      []original
	rng        *rand.Rand

	// What the worker is doing and since when, for the stuck-read watchdog.
	mu      sync.Mutex
	doing   string
	doingAt time.Time
}

func (w *worker) begin(format string, args ...any) {
	w.mu.Lock()
	w.doing, w.doingAt = fmt.Sprintf(format, args...), time.Now()
	w.mu.Unlock()
}

// watch ends the program when a worker has been in one step for stuckAfter.
func watch(all []*worker) {
	for range time.Tick(time.Second) {
		for _, w := range all {
			w.mu.Lock()
			doing, since := w.doing, time.Since(w.doingAt)
			w.mu.Unlock()
			if doing != "" && since > stuckAfter {
				fail("stuck: worker %d has waited %.0f s in: %s (elapsed %.3f s)", w.id, since.Seconds(), doing, elapsed())
			}
		}
	}
}

func elapsed() float64 { return time.Since(started).Seconds() }

func (w *worker) run(deadline time.Time) {
	for time.Now().Before(deadline) {
		file := &w.files[w.rng.Intn(len(w.files))]
		reopen := false
		if w.rng.Intn(8) == 0 {
			// A whole read completes a file that was not; opening it again at once can race
			// with its promotion.
			w.readWhole(file)
			if w.rng.Intn(2) == 0 {
				continue
			}
			reopen = true
		}
		// The pattern that once served zeros: close, then open the same file at once.
		for ; ; reopen = true {
			w.session(file, reopen)
			if w.rng.Intn(3) != 0 || !time.Now().Before(deadline) {
				break
			}
		}
	}
	w.begin("")
}

// handle is one open file of a session and what a failure report says about it.
type handle struct {
	file         *original
	f            *os.File
	reopen       bool
	droppedPages bool
	reads        int
	index        int
}

func (h *handle) where(kind readKind) string {
	how := "a handle opened afresh"
	if h.reopen {
		how = "a handle opened right after a close of the same file"
	}
	if h.droppedPages {
		how += ", its page cache dropped"
	}
	return fmt.Sprintf("%s, read %d of %d on %s", kind, h.index+1, h.reads, how)
}

// dropPageCache is posix_fadvise(POSIX_FADV_DONTNEED) over the whole file.
func dropPageCache(f *os.File) error {
	const dontNeed = 4
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, dontNeed, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (w *worker) session(file *original, reopen bool) {
	path := filepath.Join(w.mountpoint, file.rel)
	w.begin("open %s", file.rel)
	f, err := os.Open(path)
	if err != nil {
		fail("open: %s: %v (worker %d, elapsed %.3f s)", file.rel, err, w.id, elapsed())
	}
	counts.opens.Add(1)
	if reopen {
		counts.reopens.Add(1)
	}
	size := int64(len(file.data))
	if info, err := f.Stat(); err != nil || info.Size() != size {
		fail("fstat: %s: size %v, error %v; the original has %d bytes (worker %d, elapsed %.3f s)",
			file.rel, sizeOf(info), err, size, w.id, elapsed())
	}
	h := &handle{file: file, f: f, reopen: reopen, reads: 1 + w.rng.Intn(8)}
	if w.rng.Intn(3) == 0 {
		// Reads then reach the daemon or the cache file, not pages an earlier handle left.
		h.droppedPages = true
		if err := dropPageCache(f); err != nil {
			fail("posix_fadvise: %s: %v (worker %d, elapsed %.3f s)", file.rel, err, w.id, elapsed())
		}
	}
	for h.index = 0; h.index < h.reads; h.index++ {
		w.oneRead(h)
	}
	w.begin("close %s", file.rel)
	if err := f.Close(); err != nil {
		fail("close: %s: %v (worker %d, elapsed %.3f s)", file.rel, err, w.id, elapsed())
	}
}

func sizeOf(info fs.FileInfo) any {
	if info == nil {
		return "unknown"
	}
	return info.Size()
}

// readWhole is os.ReadFile: open, fstat for the size, read to the end, close.
func (w *worker) readWhole(file *original) {
	w.begin("os.ReadFile %s", file.rel)
	data, err := os.ReadFile(filepath.Join(w.mountpoint, file.rel))
	counts.opens.Add(1)
	counts.wholeFiles.Add(1)
	if err != nil {
		fail("os.ReadFile: %s: %v (worker %d, elapsed %.3f s)", file.rel, err, w.id, elapsed())
	}
	w.compare(file, 0, int64(len(file.data)), data, "os.ReadFile")
}

// offset picks where a read starts: anywhere in the file, now and then at or past its end.
func (w *worker) offset(size int64) int64 {
	if size == 0 || w.rng.Intn(50) == 0 {
		return size + int64(w.rng.Intn(2))
	}
	return w.rng.Int63n(size)
}

func (w *worker) oneRead(h *handle) {
	size := int64(len(h.file.data))
	kind := readKind(w.rng.Intn(int(kindCount)))
	counts.byKind[kind].Add(1)
	switch kind {
	case small:
		w.readAt(h, kind, w.offset(size), 1+w.rng.Intn(4<<10))
	case medium:
		w.readAt(h, kind, w.offset(size), 1+w.rng.Intn(128<<10))
	case large:
		w.readAt(h, kind, w.offset(size), 1+w.rng.Intn(1<<20))
	case boundary:
		// Across the end of a block: from a little before it to a little after.
		if size <= blockSize {
			w.readAt(h, kind, w.offset(size), 1+w.rng.Intn(blockSize))
			return
		}
		edge := blockSize * (1 + w.rng.Int63n((size-1)/blockSize))
		before := 1 + w.rng.Int63n(64<<10)
		w.readAt(h, kind, edge-before, int(before)+1+w.rng.Intn(64<<10))
	case tail:
		// The file's last bytes, asking for more than is there.
		back := int64(0)
		if size > 0 {
			back = 1 + w.rng.Int63n(min64(size, blockSize+4096))
		}
		w.readAt(h, kind, size-back, int(back)+1+w.rng.Intn(8<<10))
	case readAllFrom:
		off := w.offset(size)
		w.begin("ReadAll of %s from %d", h.file.rel, off)
		if _, err := h.f.Seek(off, io.SeekStart); err != nil {
			fail("seek: %s to %d: %v (worker %d, elapsed %.3f s)", h.file.rel, off, err, w.id, elapsed())
		}
		data, err := io.ReadAll(h.f)
		counts.reads.Add(1)
		if err != nil {
			fail("read: %s from %d: %v (%s; worker %d, elapsed %.3f s)", h.file.rel, off, err, h.where(kind), w.id, elapsed())
		}
		w.compare(h.file, off, size-min64(off, size), data, h.where(kind))
	case sequential:
		w.sequentialRun(h, kind)
	}
}

// readAt reads [off, off+length) with ReadAt semantics: every byte asked for up to the end of
// the file, and io.EOF only when the read reaches past the end.
func (w *worker) readAt(h *handle, kind readKind, off int64, length int) {
	size := int64(len(h.file.data))
	w.begin("%d bytes of %s at %d (%s)", length, h.file.rel, off, kind)
	buf := make([]byte, length)
	n, err := h.f.ReadAt(buf, off)
	counts.reads.Add(1)
	want := max64(0, min64(int64(length), size-off))
	if err != nil && !(errors.Is(err, io.EOF) && off+int64(length) > size) {
		fail("read: %s at offset %d, length %d: %v after %d bytes (%s; worker %d, elapsed %.3f s)",
			h.file.rel, off, length, err, n, h.where(kind), w.id, elapsed())
	}
	w.compareRead(h.file, off, length, want, buf[:n], h.where(kind))
}

// sequentialRun reads on from one offset with plain read(2) calls, as a program streaming a file
// does. A read of a regular file returns less than asked only at the end of the file.
func (w *worker) sequentialRun(h *handle, kind readKind) {
	size := int64(len(h.file.data))
	off := w.offset(size)
	if _, err := h.f.Seek(off, io.SeekStart); err != nil {
		fail("seek: %s to %d: %v (worker %d, elapsed %.3f s)", h.file.rel, off, err, w.id, elapsed())
	}
	steps := 2 + w.rng.Intn(15)
	for step := 0; step < steps && off <= size; step++ {
		lengths := []int{4 << 10, 64 << 10, 128 << 10, blockSize, 1 + w.rng.Intn(200<<10)}
		length := lengths[w.rng.Intn(len(lengths))]
		w.begin("read(2) of %d bytes of %s at %d (%s, step %d)", length, h.file.rel, off, kind, step+1)
		buf := make([]byte, length)
		n, err := h.f.Read(buf)
		counts.reads.Add(1)
		want := max64(0, min64(int64(length), size-off))
		if err != nil && !(errors.Is(err, io.EOF) && want == 0) {
			fail("read: %s at offset %d, length %d: %v after %d bytes (%s, step %d; worker %d, elapsed %.3f s)",
				h.file.rel, off, length, err, n, h.where(kind), step+1, w.id, elapsed())
		}
		w.compareRead(h.file, off, length, want, buf[:n], fmt.Sprintf("%s, step %d", h.where(kind), step+1))
		off += int64(n)
		if n == 0 {
			return
		}
	}
}

// compareRead checks a positioned read: want bytes (all asked for up to the end), each right.
func (w *worker) compareRead(file *original, off int64, length int, want int64, got []byte, where string) {
	if int64(len(got)) != want {
		expected := file.data[min64(off, int64(len(file.data))) : min64(off, int64(len(file.data)))+want]
		extra := ""
		if int64(len(got)) < want {
			extra = "; " + describeMismatch(expected, got, off)
		}
		fail("short read: %s at offset %d, length %d: got %d bytes of the %d there (file size %d)%s (%s; worker %d, elapsed %.3f s)",
			file.rel, off, length, len(got), want, len(file.data), extra, where, w.id, elapsed())
	}
	w.compareBytes(file, off, length, got, where)
}

// compare checks a read that should have returned everything from off to the end.
func (w *worker) compare(file *original, off int64, want int64, got []byte, where string) {
	w.compareRead(file, off, int(want), want, got, where)
}

func (w *worker) compareBytes(file *original, off int64, length int, got []byte, where string) {
	counts.bytesCompared.Add(int64(len(got)))
	expected := file.data[off : off+int64(len(got))]
	if bytes.Equal(expected, got) {
		return
	}
	fail("wrong bytes: %s (size %d) at offset %d, length %d: %s (%s; worker %d, elapsed %.3f s)",
		file.rel, len(file.data), off, length, describeMismatch(expected, got, off), where, w.id, elapsed())
}

// describeMismatch says where the served bytes first differ and whether they are zeros there.
func describeMismatch(expected, got []byte, off int64) string {
	first := 0
	for first < len(got) && first < len(expected) && got[first] == expected[first] {
		first++
	}
	if first >= len(got) {
		return fmt.Sprintf("the first %d bytes are right, then nothing (the bytes from offset %d were not served)",
			len(got), off+int64(first))
	}
	at := off + int64(first)
	zeros := 0
	for first+zeros < len(got) && got[first+zeros] == 0 {
		zeros++
	}
	differing := 0
	for i := first; i < len(got); i++ {
		if got[i] != expected[i] {
			differing++
		}
	}
	zeroText := "no"
	if zeros > 0 {
		zeroText = fmt.Sprintf("yes, %d zero bytes in a row from there", zeros)
		if first+zeros == len(got) {
			zeroText += " to the end of the read"
		}
	}
	return fmt.Sprintf("first differing offset %d (block %d + %d); served bytes zero there: %s; "+
		"%d of the %d bytes from there differ; served %s, original %s",
		at, at/blockSize, at%blockSize, zeroText, differing, len(got)-first,
		hexAt(got, first), hexAt(expected, first))
}

func hexAt(b []byte, from int) string {
	end := from + 16
	if end > len(b) {
		end = len(b)
	}
	return fmt.Sprintf("% x", b[from:end])
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
