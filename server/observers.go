package server

import (
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// observers is several core.Observers as one: the metrics and the
// operator console's traffic ring (either may be nil).
type observers [2]core.Observer

func (obs observers) CallStarted() {
	for _, o := range obs {
		if o != nil {
			o.CallStarted()
		}
	}
}

func (obs observers) CallDone(server, tool, outcome string, end time.Time, took time.Duration) {
	for _, o := range obs {
		if o != nil {
			o.CallDone(server, tool, outcome, end, took)
		}
	}
}

func (obs observers) OperationDone(server, method, outcome string, took time.Duration) {
	for _, o := range obs {
		if o != nil {
			o.OperationDone(server, method, outcome, took)
		}
	}
}

func (obs observers) RateLimited(principal, limit string) {
	for _, o := range obs {
		if o != nil {
			o.RateLimited(principal, limit)
		}
	}
}
