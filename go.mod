module cloud2mqtt

go 1.26.0

require (
	github.com/VictoriaMetrics/metrics v1.44.0
	github.com/caarlos0/env/v11 v11.4.2
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/mattn/go-isatty v0.0.20
	github.com/mochi-mqtt/server/v2 v2.7.9
	github.com/rs/zerolog v1.35.1
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.16.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/rs/xid v1.6.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
