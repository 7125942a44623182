package web

import (
	"context"
	"net/http"
	"net/netip"
)

// Home Assistant's ingress: in app mode the Supervisor's proxy (172.30.32.2)
// forwards the sidebar page to a listener of its own, and the page's relative
// URLs keep it under the prefix. There, other addresses get 403 (host_network
// exposes the port); Host and HTTP_TOKEN are not checked, since Home Assistant
// authenticated the user, but an action's Origin must match X-Forwarded-Host.
// The page may be framed by its own origin, and streams have their own pool.

type ingressKey struct{}

// viaIngress reports whether r came through the ingress listener.
func viaIngress(r *http.Request) bool {
	v, _ := r.Context().Value(ingressKey{}).(bool)
	return v
}

// Ingress is the handler of the ingress listener: the same page, API,
// /healthz and /metrics, for the proxy at peer only.
func (h *Handler) Ingress(peer netip.Addr) http.Handler {
	peer = peer.Unmap()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w, true)
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || ap.Addr().Unmap().WithZone("") != peer {
			h.refuse(w, r, &refusal{status: http.StatusForbidden,
				msg: "this port is Home Assistant's ingress: it answers only the Supervisor's proxy (" + peer.String() +
					"); open the page from Home Assistant's sidebar, or set HTTP_ADDR (the app's http_addr) for direct access"})
			return
		}
		h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ingressKey{}, true)))
	})
}
