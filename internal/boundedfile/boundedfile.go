// Package boundedfile reads the files toolsvc is told to read (its
// configuration, the files it names, ${file:} references, the token
// store and its key) with one set of rules, so that no such path can
// exhaust memory or hang the process: a regular file only (after
// following symlinks, as Kubernetes secret mounts are), read through a
// size limit; devices (/dev/zero, /dev/stdin), FIFOs, sockets and
// directories are refused before anything is read, as are the
// pseudo-files of /proc and /sys.
package boundedfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Read reads a regular file of at most limit bytes, through the limit,
// and returns it with the file's information (taken from the open file,
// so what is read is what was checked: its mode, for a secret). The
// pseudo-files of /proc and /sys call themselves regular but report a
// size that is not their content's (0 for /proc/self/environ): they are
// refused. what names the reader in refusals ("${file:}"). An error
// wraps the *os.PathError's cause, so errors.Is(err, fs.ErrNotExist)
// works.
func Read(name string, limit int64, what string) ([]byte, os.FileInfo, error) {
	if real, err := filepath.EvalSymlinks(name); err == nil && pseudoFS(real) {
		return nil, nil, fmt.Errorf("refused: %s is a pseudo-file of the kernel, not a regular file", real)
	}
	// O_NONBLOCK: opening a FIFO must not wait for a writer (open(2)); it
	// does nothing for a regular file.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the file: %w", unwrapPathError(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the file: %w", unwrapPathError(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("refused: not a regular file (%s); %s is read from regular files only", FileKind(fi.Mode()), what)
	}
	tooLarge := fmt.Sprintf("refused: the file is larger than the %s limit of %s", size(limit), what)
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s (%d bytes)", tooLarge, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the file: %w", unwrapPathError(err))
	}
	switch {
	case int64(len(b)) > limit:
		return nil, nil, fmt.Errorf("%s (it grew while read)", tooLarge)
	case int64(len(b)) != fi.Size():
		// A regular file's content is its size; a kernel pseudo-file's is not.
		return nil, nil, fmt.Errorf("refused: the file reports %d bytes but holds %d: a pseudo-file, or changing while read", fi.Size(), len(b))
	}
	return b, fi, nil
}

// size names a limit: whole MiB, else bytes.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d-byte", n)
}

// pseudoFS reports whether a resolved path lies in /proc or /sys.
func pseudoFS(p string) bool {
	for _, root := range []string{"/proc", "/sys"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// FileKind names the type of a file that is not regular.
func FileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "an irregular file"
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
