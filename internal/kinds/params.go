package kinds

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ParamError is one problem with a builtin job's parameter.
type ParamError struct {
	Param string // empty when the problem is the builtin name itself
	Msg   string
}

func (e ParamError) Error() string {
	if e.Param == "" {
		return e.Msg
	}
	return e.Param + ": " + e.Msg
}

// InvoicesParams are the parameters of the invoices builtin.
type InvoicesParams struct {
	// Clients is how many clients are billed, ids 1..Clients. Default 600.
	Clients int
	// Delay is the pause between two clients. Default 0.
	Delay time.Duration
	// Period is "month" (one invoice per client per month of the slot, YYYY-MM) or "slot" (one
	// per client per slot, its RFC3339 time). Default month.
	Period string
	// EmailTo, when set, queues one e-mail per new invoice to this address, "{client}" replaced
	// by the client's id (such as "client-{client}@example.test"). Default: no e-mail.
	EmailTo string
}

// StockParams are the parameters of the stock builtin; it has none today.
type StockParams struct{}

// BuiltinNames lists the builtin jobs, sorted.
func BuiltinNames() []string { return []string{"invoices", "stock"} }

// maxClients bounds Clients: ids are written as integers, and a run bills one client per
// fenced transaction.
const maxClients = 10_000_000

// Check reports every problem of p, each at its key (params.NAME): the one check of the invoices
// builtin's parameters, which ParseInvoicesParams and NewInvoices both apply.
func (p InvoicesParams) Check() []Problem {
	var ps problems
	if p.Clients < 1 || p.Clients > maxClients {
		ps.add("params.clients", fmt.Sprintf("must be a whole number from 1 to %d, got %d", maxClients, p.Clients))
	}
	if p.Delay < 0 {
		ps.add("params.delay", fmt.Sprintf("must not be negative, got %s", p.Delay))
	}
	if p.Period != "month" && p.Period != "slot" {
		ps.add("params.period", fmt.Sprintf("must be month or slot, got %v", p.Period))
	}
	if msg := checkEmailTo(p.EmailTo); msg != "" {
		ps.add("params.email_to", msg)
	}
	return ps
}

// ParseInvoicesParams reads the invoices builtin's parameters, applying defaults, and checks
// them (InvoicesParams.Check).
func ParseInvoicesParams(m map[string]any) (InvoicesParams, []ParamError) {
	p := InvoicesParams{Clients: 600, Period: "month"}
	var errs []ParamError
	for k, v := range m {
		switch k {
		case "clients":
			n, ok := asInt(v)
			if !ok {
				errs = append(errs, ParamError{k, fmt.Sprintf("must be a whole number from 1 to %d, got %v", maxClients, v)})
				continue
			}
			p.Clients = n
		case "delay":
			d, err := asDuration(v)
			if err != nil {
				errs = append(errs, ParamError{k, err.Error()})
				continue
			}
			p.Delay = d
		case "period":
			s, ok := v.(string)
			if !ok {
				errs = append(errs, ParamError{k, fmt.Sprintf("must be month or slot, got %v", v)})
				continue
			}
			p.Period = s
		case "email_to":
			s, ok := v.(string)
			if !ok {
				errs = append(errs, ParamError{k, fmt.Sprintf("must be a string, got %v", v)})
				continue
			}
			if msg := checkEmailTo(s); msg != "" {
				errs = append(errs, ParamError{k, msg})
				continue
			}
			p.EmailTo = s
		default:
			errs = append(errs, ParamError{k, "unknown parameter of builtin invoices (known: clients, delay, email_to, period)"})
		}
	}
	for _, pr := range p.Check() {
		errs = append(errs, ParamError{strings.TrimPrefix(pr.Key, "params."), pr.Message})
	}
	sortParamErrors(errs)
	return p, errs
}

// ParseStockParams reads the stock builtin's parameters.
func ParseStockParams(m map[string]any) (StockParams, []ParamError) {
	var errs []ParamError
	for k := range m {
		errs = append(errs, ParamError{k, "unknown parameter of builtin stock (it takes none)"})
	}
	sortParamErrors(errs)
	return StockParams{}, errs
}

func sortParamErrors(errs []ParamError) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Param < errs[j].Param })
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case uint64:
		return int(n), n <= 1<<53
	case float64:
		return wholeFloat(n)
	case string: // a variable's value, SCHEDULER_DEFAULTS_PARAMS_CLIENTS=5
		s := strings.TrimSpace(n)
		if i, err := strconv.Atoi(s); err == nil {
			return i, true
		}
		// The file's 5.0 and 1e3 are whole numbers, so a variable's are too.
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		return wholeFloat(x)
	}
	return 0, false
}

// wholeFloat is x as an int when it is a whole number an int holds.
func wholeFloat(x float64) (int, bool) {
	if x != math.Trunc(x) || x >= math.MaxInt || x < math.MinInt {
		return 0, false
	}
	return int(x), true
}

func asDuration(v any) (time.Duration, error) {
	switch d := v.(type) {
	case string:
		parsed, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (use a unit, such as 500ms or 2s)", d)
		}
		return parsed, nil
	case time.Duration:
		return d, nil
	case int:
		if d == 0 {
			return 0, nil
		}
	}
	return 0, fmt.Errorf("must be a duration with a unit, such as 500ms, got %v", v)
}
