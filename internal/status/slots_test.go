package status

import (
	"strings"
	"testing"
	"time"
)

func TestMarkDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.In(berlin)
	}
	for _, tc := range []struct {
		name  string
		now   time.Time
		slots []Slot
		want  []string // each slot's DST note contains this; "" for none
		zones []string
	}{
		{
			name:  "NoChange",
			now:   at("2026-01-10T12:00:00Z"),
			slots: []Slot{{At: at("2026-01-11T01:00:00Z")}, {At: at("2026-01-12T01:00:00Z")}},
			want:  []string{"", ""},
			zones: []string{"CET", "CET"},
		},
		{
			// "30 2 * * *" in spring: 02:30 does not exist on 29 March 2026, so it fires at 03:00 CEST.
			name: "MovedForward",
			now:  at("2026-03-27T12:00:00Z"),
			slots: []Slot{
				{At: at("2026-03-28T01:30:00Z"), Nominal: "2026-03-28 02:30:00"},
				{At: at("2026-03-29T01:00:00Z"), Nominal: "2026-03-29 02:30:00", Adjusted: true},
				{At: at("2026-03-30T00:30:00Z"), Nominal: "2026-03-30 02:30:00"},
			},
			want:  []string{"", "moved by a DST change: 2026-03-29 02:30:00 does not exist in Europe/Berlin", ""},
			zones: []string{"CET", "CEST", "CEST"},
		},
		{
			// Hourly in autumn: the offset changes between two slots.
			name: "OffsetChanges",
			now:  at("2026-10-24T23:30:00Z"),
			slots: []Slot{
				{At: at("2026-10-25T00:00:00Z")}, // 02:00 CEST
				{At: at("2026-10-25T01:00:00Z")}, // 02:00 CET, the hour repeated
				{At: at("2026-10-25T02:00:00Z")},
			},
			want:  []string{"", "UTC offset changes from +02:00 to +01:00 (DST)", ""},
			zones: []string{"CEST", "CET", "CET"},
		},
		{
			// The first slot is compared with the offset now.
			name:  "FirstAfterChange",
			now:   at("2026-03-28T12:00:00Z"),
			slots: []Slot{{At: at("2026-03-30T00:00:00Z")}},
			want:  []string{"UTC offset changes from +01:00 to +02:00 (DST)"},
			zones: []string{"CEST"},
		},
		{name: "None", now: at("2026-03-28T12:00:00Z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := markDST(tc.now, tc.slots)
			if len(got) != len(tc.want) {
				t.Fatalf("%d slots, want %d", len(got), len(tc.want))
			}
			for i, s := range got {
				switch {
				case tc.want[i] == "" && s.DST != "":
					t.Errorf("slot %d (%s): DST=%q, want none", i, s.At, s.DST)
				case tc.want[i] != "" && !strings.Contains(s.DST, tc.want[i]):
					t.Errorf("slot %d (%s): DST=%q, want %q", i, s.At, s.DST, tc.want[i])
				}
				if s.Zone != tc.zones[i] {
					t.Errorf("slot %d: zone=%s, want %s", i, s.Zone, tc.zones[i])
				}
				if !s.Adjusted && s.Nominal != "" {
					t.Errorf("slot %d: nominal=%q kept on a slot not adjusted", i, s.Nominal)
				}
			}
		})
	}
}
