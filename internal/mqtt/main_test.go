package mqtt

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// paho's reconnect and connect-retry loops sleep with time.Sleep,
		// which Disconnect cannot interrupt: a client closed while it waits
		// to reconnect leaves that goroutine (and the one Disconnect starts
		// to wait for it) until the sleep ends, at most MaxReconnectInterval
		// or ConnectRetryInterval, which the tests keep below a second.
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*backoffController).sleepWithBackoff"),
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*connectionStatus).Disconnecting"),
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*client).Connect.func1"),
	)
}
