//go:build nodered && race

package nodered_test

// raceEnabled: the test runs with -race, so the bridge binary is built with
// it too and a data race in the daemon fails the check (exit status 66).
const raceEnabled = true
