//go:build nodered && !race

package nodered_test

const raceEnabled = false
