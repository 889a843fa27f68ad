package jobs

import (
	"testing"
	"time"

	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// jobTypesTimeout bounds each test of the job types that touches a database or a process.
const jobTypesTimeout = 2 * time.Minute
