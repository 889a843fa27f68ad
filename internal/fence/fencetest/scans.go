package fencetest

import (
	"context"
	"testing"

	"scheduler"
	"scheduler/internal/fence"
)

// StockScans returns the skus of the rows in stock_scans, in order, read in a fenced
// transaction of its own (job "reader", token 1): what the tests' executors wrote through their
// attempts' fenced transactions.
func StockScans(ctx context.Context, tb testing.TB, s *fence.Store) []string {
	tb.Helper()
	var skus []string
	err := s.Fenced(ctx, "reader", 1, func(ctx context.Context, tx scheduler.Tx) error {
		skus = skus[:0]
		rows, err := tx.Query(ctx, `SELECT sku FROM stock_scans ORDER BY sku`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var sku string
			if err := rows.Scan(&sku); err != nil {
				return err
			}
			skus = append(skus, sku)
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("read stock_scans: %v", err)
	}
	return skus
}
