//go:build !race

package nodered_test

const raceEnabled = false
