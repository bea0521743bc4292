package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal for driving the CLI as a person would: the
// child gets the terminal end (term) as stdin and stderr, the test writes
// keystrokes to and reads the screen from the controlling end.
type pty struct {
	control *os.File
	term    *os.File

	mu     sync.Mutex
	screen strings.Builder
	more   chan struct{} // signalled when the screen grows
	done   chan struct{} // closed when the reader stops
}

// openPTY opens a pseudo-terminal (Linux /dev/ptmx) and reads its screen
// until the test ends.
func openPTY(t *testing.T) *pty {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n int
	raw, err := control.SyscallConn()
	if err == nil {
		err2 := raw.Control(func(fd uintptr) {
			if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
				n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
			}
		})
		if err == nil {
			err = err2
		}
	}
	if err != nil {
		control.Close()
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	term, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		control.Close()
		t.Fatalf("opening the terminal end: %v", err)
	}
	p := &pty{control: control, term: term, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := control.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.screen.Write(buf[:n])
				p.mu.Unlock()
				select {
				case p.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once no process holds the terminal end, or closed
			}
		}
	}()
	t.Cleanup(func() {
		term.Close()
		control.Close()
		<-p.done
	})
	return p
}

// Screen is everything the terminal showed so far.
func (p *pty) Screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen.String()
}

// expect waits until the screen shows want after from (an offset into the
// screen) and returns the offset just past it.
func (p *pty) expect(t *testing.T, from int, want string, timeout time.Duration) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s := p.Screen()
		if i := strings.Index(s[min(from, len(s)):], want); i >= 0 {
			return min(from, len(s)) + i + len(want)
		}
		select {
		case <-p.more:
		case <-deadline:
			t.Fatalf("the terminal did not show %q within %s; it shows:\n%s", want, timeout, s[min(from, len(s)):])
		}
	}
}

// typeLine types a line and Enter.
func (p *pty) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintf(p.control, "%s\r", line); err != nil {
		t.Fatalf("typing %q: %v", line, err)
	}
}
