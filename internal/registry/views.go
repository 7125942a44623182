package registry

// Views returns every listed device as the registry knows it, in the
// cloud's order, without values (View.Values is nil): what the status
// page's table shows, read at once under one lock.
func (r *Registry) Views() []View {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]View, len(r.list))
	for i, k := range r.list {
		v := r.devices[k].view()
		v.Values = nil
		out[i] = v
	}
	return out
}
