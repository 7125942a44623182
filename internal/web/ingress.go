package web

import (
	"context"
	"net/http"
	"net/netip"
)

// Home Assistant's ingress (docs/status-page.md): in app
// mode the Supervisor's proxy (one address, 172.30.32.2) forwards the
// sidebar's page from /api/hassio_ingress/<token>/ to a listener of the
// daemon's own, stripping that prefix and naming it in X-Ingress-Path. The
// page's URLs are all relative, so they stay under the prefix with no help
// from the server. On that listener:
//   - a connection from any other address is answered 403 before anything
//     is served (with host_network the port is open to the LAN);
//   - the Host is not checked (the proxy sends the container's name), nor
//     are actions behind HTTP_TOKEN (Home Assistant authenticated the
//     user); the CSRF guard stays, and an action's Origin must name the
//     host the browser reached Home Assistant by (X-Forwarded-Host, which
//     Home Assistant's proxy always sends): without either it is refused;
//   - the page may be framed by its own origin (Home Assistant shows it
//     in an iframe of its page);
//   - event streams have a pool of their own (every user of Home
//     Assistant comes from the proxy's one address).

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
