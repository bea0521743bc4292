package service

import (
	"runtime"
	"sync"
	"time"
)

// Schema validation runs on long-lived goroutines. grpc-go runs every RPC
// on a fresh goroutine with an 8 KiB stack, and jsonschema-go's recursive
// validator has large frames: validated inline, nearly every call grew and
// copied a stack that already held the whole interceptor chain
// (runtime.newstack/copystack were most of the validation's CPU; see
// docs/benchmarks.md). A worker's stack grows once and stays grown, so the
// call pays two goroutine switches instead. When every worker is busy the
// call validates inline rather than wait; idle workers exit, and Shutdown
// stops them (calls after that validate inline).

// validatorIdle is how long a worker waits for work before it exits.
const validatorIdle = 30 * time.Second

// validateInline turns the pool off (benchmarks compare both).
var validateInline = false

type validatorPool struct {
	jobs chan *validateJob // unbuffered: a send succeeds only into a waiting worker
	stop chan struct{}
	max  int

	mu      sync.Mutex
	n       int // workers running
	stopped bool
	wg      sync.WaitGroup
}

type validateJob struct {
	f    func()
	done chan struct{}
}

var jobPool = sync.Pool{New: func() any { return &validateJob{done: make(chan struct{}, 1)} }}

func newValidatorPool() *validatorPool {
	return &validatorPool{jobs: make(chan *validateJob), stop: make(chan struct{}), max: runtime.GOMAXPROCS(0)}
}

// run calls f on a worker and waits for it, or calls it inline when no
// worker can take it.
func (p *validatorPool) run(f func()) {
	if p == nil || validateInline {
		f()
		return
	}
	j := jobPool.Get().(*validateJob)
	j.f = f
	defer func() { j.f = nil; jobPool.Put(j) }()
	select {
	case p.jobs <- j: // an idle worker took it
		<-j.done
		return
	default:
	}
	p.mu.Lock()
	if p.stopped || p.n >= p.max {
		p.mu.Unlock()
		f()
		return
	}
	p.n++
	p.wg.Add(1)
	p.mu.Unlock()
	go p.worker()
	select {
	case p.jobs <- j:
		<-j.done
	case <-p.stop:
		f()
	}
}

func (p *validatorPool) worker() {
	defer p.wg.Done()
	idle := time.NewTimer(validatorIdle)
	defer idle.Stop()
	for {
		select {
		case j := <-p.jobs:
			j.f()
			j.done <- struct{}{}
			idle.Reset(validatorIdle)
		case <-idle.C:
			p.mu.Lock()
			p.n--
			p.mu.Unlock()
			// A job sent after this point finds no receiver and runs inline
			// or starts a new worker.
			return
		case <-p.stop:
			return
		}
	}
}

// close stops the workers and waits for them; later calls validate inline.
func (p *validatorPool) close() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	close(p.stop)
	p.mu.Unlock()
	p.wg.Wait()
}
