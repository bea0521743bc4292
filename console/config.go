package console

import (
	"net/http"

	"github.com/toolsvc/toolsvc/service/core"
)

// config is the Config page's data: the configuration file's status as
// ListServers gives it to operators (the path, when it was loaded, the
// last reload's outcome and every problem, without secret values, what it
// added, removed and restarted, Kubernetes discovery's sources). An
// operator's only: paths and errors name files, users and URLs.
func (cs *Console) config(c *caller, _ *http.Request) (any, *core.Error) {
	if e := operatorOnly(c, "see the configuration's status"); e != nil {
		return nil, e
	}
	if cs.opts.Config == nil {
		return map[string]any{"demo": true}, nil
	}
	return cs.opts.Config(), nil
}

// effective is the running configuration with every secret shown as
// "[redacted]" (config.Config.Redacted: referenced values wherever they
// land, header and environment values, tokens, client secrets, refresh
// tokens, private keys, passwords). An operator's only, like the status.
func (cs *Console) effective(c *caller, _ *http.Request) (any, *core.Error) {
	if e := operatorOnly(c, "see the configuration"); e != nil {
		return nil, e
	}
	if cs.opts.Effective == nil {
		return map[string]any{"demo": true}, nil
	}
	return cs.opts.Effective(), nil
}
