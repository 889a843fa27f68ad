package kinds

import (
	"testing"
	"time"

	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// jobTypesTimeout bounds each test of the job kinds that touches a database or a process.
const jobTypesTimeout = 2 * time.Minute

// t0 is the slot of the kinds' tests that need one and do not care which.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
