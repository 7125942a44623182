package poller

import (
	"testing"
	"time"
)

func TestPlanInterval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices int
		cfg     Config
		want    Plan
	}{
		{
			name: "no limit: the configured interval", devices: 10, cfg: Config{Interval: time.Minute},
			want: Plan{Devices: 10, Configured: time.Minute, Interval: time.Minute, StateRequests: 14400, Total: 14400},
		},
		{
			name: "default interval", devices: 1, cfg: Config{},
			want: Plan{Devices: 1, Configured: time.Minute, Interval: time.Minute, StateRequests: 1440, Total: 1440},
		},
		{
			name: "below the floor", devices: 1, cfg: Config{Interval: 500 * time.Millisecond},
			want: Plan{Devices: 1, Configured: 2 * time.Second, Interval: 2 * time.Second, StateRequests: 43200, Total: 43200},
		},
		{
			// 9000 − 144 lists − 2×2×4 scenes − 2 first reads − 2×500 commands = 7838, 3919 a device.
			name: "roomy limit keeps the configured interval", devices: 2, cfg: Config{Interval: time.Minute, DailyLimit: 10000},
			want: Plan{
				Devices: 2, Limit: 10000, Budget: 9000, ListRequests: 144, SceneRequests: 16, FirstRequests: 2, CommandRequests: 1000,
				StateBudget: 7838, Configured: time.Minute, Needed: 23 * time.Second, Interval: time.Minute,
				StateRequests: 2880, Total: 4042,
			},
		},
		{
			// 9000 − 144 − 80 − 10 − 1000 = 7766, 776 a device: 86400/776 = 111.3 → 112 s.
			name: "tight limit lengthens the interval", devices: 10, cfg: Config{Interval: 30 * time.Second, DailyLimit: 10000},
			want: Plan{
				Devices: 10, Limit: 10000, Budget: 9000, ListRequests: 144, SceneRequests: 80, FirstRequests: 10, CommandRequests: 1000,
				StateBudget: 7766, Configured: 30 * time.Second, Needed: 112 * time.Second, Interval: 112 * time.Second,
				StateRequests: 7720, Total: 8954,
			},
		},
		{
			name: "command allowance configured", devices: 10, cfg: Config{Interval: 30 * time.Second, DailyLimit: 10000, CommandsPerDay: 100},
			want: Plan{
				Devices: 10, Limit: 10000, Budget: 9000, ListRequests: 144, SceneRequests: 80, FirstRequests: 10, CommandRequests: 200,
				StateBudget: 8566, Configured: 30 * time.Second, Needed: 101 * time.Second, Interval: 101 * time.Second,
				StateRequests: 8560, Total: 8994,
			},
		},
		{
			name: "longer list and scene intervals leave more for reads", devices: 10,
			cfg: Config{Interval: 30 * time.Second, DailyLimit: 10000, ListInterval: time.Hour, SceneInterval: day},
			want: Plan{
				Devices: 10, Limit: 10000, Budget: 9000, ListRequests: 24, SceneRequests: 20, FirstRequests: 10, CommandRequests: 1000,
				StateBudget: 7946, Configured: 30 * time.Second, Needed: 109 * time.Second, Interval: 109 * time.Second,
				StateRequests: 7930, Total: 8984,
			},
		},
		{
			// 900 − 144 − 800 − 100 − 100 < 0.
			name: "over budget", devices: 100, cfg: Config{DailyLimit: 1000},
			want: Plan{
				Devices: 100, Limit: 1000, Budget: 900, ListRequests: 144, SceneRequests: 800, FirstRequests: 100, CommandRequests: 100,
				StateBudget: -244, Configured: time.Minute, Needed: day, Interval: day,
				StateRequests: 100, Total: 1244, OverBudget: true,
			},
		},
		{
			// Periodic reads go out on the one-second grid: 2.5 s reads every 3 s.
			name: "interval not whole seconds is rounded up", devices: 3, cfg: Config{Interval: 2500 * time.Millisecond},
			want: Plan{Devices: 3, Configured: 2500 * time.Millisecond, Interval: 3 * time.Second, StateRequests: 86400, Total: 86400},
		},
		{
			// 27000 − 144 − 80 − 10 − 3000 = 23766, 2376 a device: 37 s needed;
			// the configured 37.5 s rules, rounded up to 38 s: 10 × 2274 reads.
			name: "configured interval not whole seconds under a limit", devices: 10, cfg: Config{Interval: 37500 * time.Millisecond, DailyLimit: 30000},
			want: Plan{
				Devices: 10, Limit: 30000, Budget: 27000, ListRequests: 144, SceneRequests: 80, FirstRequests: 10, CommandRequests: 3000,
				StateBudget: 23766, Configured: 37500 * time.Millisecond, Needed: 37 * time.Second, Interval: 38 * time.Second,
				StateRequests: 22740, Total: 25974,
			},
		},
		{
			name: "no devices yet", devices: 0, cfg: Config{DailyLimit: 1000},
			want: Plan{Limit: 1000, Configured: time.Minute, Interval: time.Minute},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			interval, plan := PlanInterval(tc.devices, tc.cfg)
			if plan != tc.want {
				t.Errorf("plan\n got %+v\nwant %+v", plan, tc.want)
			}
			if interval != plan.Interval {
				t.Errorf("returned %v, plan says %v", interval, plan.Interval)
			}
		})
	}
}

// Whatever the numbers, a feasible plan fits its budget and does not waste
// it: one second less would not fit (or the configured interval rules).
func TestPlanIntervalFitsBudget(t *testing.T) {
	for _, limit := range []int{500, 1000, 2500, 10000, 100000} {
		for devices := 1; devices <= 300; devices += 7 {
			for _, cfg := range []Config{
				{Interval: 2 * time.Second, DailyLimit: limit},
				{Interval: 45 * time.Second, DailyLimit: limit, CommandsPerDay: 50, ListInterval: 5 * time.Minute},
				{Interval: 37500 * time.Millisecond, DailyLimit: limit},
			} {
				_, plan := PlanInterval(devices, cfg)
				if plan.OverBudget {
					continue
				}
				if plan.Total > plan.Budget {
					t.Fatalf("limit %d, %d devices: plan %+v exceeds its budget", limit, devices, plan)
				}
				if plan.Interval%time.Second != 0 || plan.Interval < plan.Configured {
					t.Fatalf("limit %d, %d devices: interval %v is not the configured %v or more, in whole seconds", limit, devices, plan.Interval, plan.Configured)
				}
				if plan.Interval > gridUp(plan.Configured) {
					shorter := devices*perDay(plan.Interval-time.Second) + plan.Total - plan.StateRequests
					if shorter <= plan.Budget {
						t.Fatalf("limit %d, %d devices: %v would also fit (%d ≤ %d): plan %+v", limit, devices, plan.Interval-time.Second, shorter, plan.Budget, plan)
					}
				}
			}
		}
	}
}
