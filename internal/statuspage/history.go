package statuspage

import (
	"errors"
	"io/fs"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/web"
)

// The chart's hours are kept beside the day's count (requests.json), so that
// after a restart "Requests today" and the chart still agree.
const (
	historyFile    = "history.json"
	historyFormat  = "cloud2mqtt/history"
	historyVersion = 1
)

// RestoreHistory adds the hours a previous run saved, once at the start. A
// missing file is a first start; a bad one is a warning and an empty chart.
func (p *Page) RestoreHistory(dir statedir.Dir, log zerolog.Logger) {
	if dir == "" {
		return
	}
	var s web.SavedHistory
	switch err := dir.Read(historyFile, historyFormat, historyVersion, &s); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		log.Warn().Err(err).Msg("the saved hourly chart cannot be used; it starts empty while today's count goes on")
	default:
		p.history.Restore(s)
	}
}

// SaveHistory writes the chart's hours. The app calls it where it saves the
// day's count, so that an idle bridge wakes for neither.
func (p *Page) SaveHistory(dir statedir.Dir, log zerolog.Logger) {
	if dir == "" {
		return
	}
	s := p.history.Saved()
	if len(s.Hours) == 0 {
		return
	}
	if err := dir.Write(historyFile, historyFormat, historyVersion, s); err != nil {
		log.Warn().Err(err).Msg("cannot save the hourly chart to the state directory")
	}
}
