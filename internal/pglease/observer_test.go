package pglease

import (
	"testing"

	"scheduler/internal/lease/leasetest"
)

func TestObserver_Run(t *testing.T) { leasetest.Observe(t, contract) }
