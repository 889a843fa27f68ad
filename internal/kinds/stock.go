package kinds

import (
	"context"
	"fmt"
	"time"

	"scheduler"
)

// The stock rebuild. Portable: both run as they are on Postgres and on SQLite, the build time
// coming in as a parameter rather than from a database clock function. The tables are named
// without a schema: public on Postgres (the default search_path).
const (
	stockClear   = `DELETE FROM stock_report`
	stockRebuild = `INSERT INTO stock_report (sku, quantity, scans, token, built_at)
SELECT sku, SUM(quantity), COUNT(*), $1, $2 FROM stock_scans GROUP BY sku`
)

// stockTimeFormat is how built_at is passed: RFC 3339 in UTC with milliseconds, the text form
// the SQLite tables use and one Postgres reads into a timestamptz.
const stockTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// StockJob is the stock builtin: it rebuilds stock_report from stock_scans, one row per SKU with
// its total quantity and number of scans, in one fenced transaction. Readers see the previous
// report or the new one, never a half-built one, and a run that fails or is fenced out leaves the
// previous report as it was.
//
// The output is "stock report rebuilt: N skus (replacing M)".
type StockJob struct {
	now func() time.Time
}

// NewStock returns the job rebuilding the report through each attempt's fenced transaction. now
// stamps built_at; nil means time.Now.
func NewStock(now func() time.Time) *StockJob {
	if now == nil {
		now = time.Now
	}
	return &StockJob{now: now}
}

// Execute rebuilds the report once for run; see StockJob.
func (j *StockJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	builtAt := j.now().UTC().Format(stockTimeFormat)
	var cleared, built int64
	err := run.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
		var err error
		if cleared, err = tx.Exec(ctx, stockClear); err != nil {
			return fmt.Errorf("clear stock_report: %w", err)
		}
		if built, err = tx.Exec(ctx, stockRebuild, run.Token, builtAt); err != nil {
			return fmt.Errorf("fill stock_report: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rebuild stock report with token %d: %w", run.Token, err)
	}
	return fmt.Sprintf("stock report rebuilt: %d skus (replacing %d)", built, cleared), nil
}
