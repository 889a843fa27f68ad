package kinds

import (
	"fmt"
	"strings"
	"time"

	"scheduler"
)

// BuiltinConfig configures a builtin job: a job written in Go, named, with its parameters.
type BuiltinConfig struct {
	// Name is the builtin: one of BuiltinNames. Required.
	Name string
	// Params are the builtin's parameters, as the configuration file spells them; see
	// InvoicesParams and StockParams.
	Params map[string]any
}

// Check reports every problem of cfg, each at its key (builtin, params.NAME): the one check of
// a builtin job's settings.
func (cfg BuiltinConfig) Check() []Problem {
	_, ps := cfg.parse()
	return ps
}

// parse reads the builtin's parameters, or reports why it cannot; params is nil then.
func (cfg BuiltinConfig) parse() (params any, ps []Problem) {
	var errs []ParamError
	switch cfg.Name {
	case "":
		return nil, []Problem{{"builtin", "is required for a builtin job: one of " + strings.Join(BuiltinNames(), ", ")}}
	case "invoices":
		params, errs = ParseInvoicesParams(cfg.Params)
	case "stock":
		params, errs = ParseStockParams(cfg.Params)
	default:
		return nil, []Problem{{"builtin", fmt.Sprintf("unknown builtin %q (known: %s)", cfg.Name, strings.Join(BuiltinNames(), ", "))}}
	}
	for _, e := range errs {
		ps = append(ps, Problem{"params." + e.Param, e.Msg})
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return params, nil
}

// NewBuiltin checks cfg (Check) and returns the builtin job; now stamps what the job records
// of the time it ran (nil: time.Now). Every problem is reported, joined, each a Problem.
func NewBuiltin(cfg BuiltinConfig, now func() time.Time) (scheduler.Executor, error) {
	params, ps := cfg.parse()
	if err := refusal(ps); err != nil {
		return nil, err
	}
	switch p := params.(type) {
	case InvoicesParams:
		return NewInvoices(p)
	case StockParams:
		return NewStock(now), nil
	}
	return nil, fmt.Errorf("builtin %q: no constructor", cfg.Name)
}
