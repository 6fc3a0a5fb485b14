package views

import "github.com/bindery-nas/bindery/internal/model"

// VideoJSON is what ffprobe said of a video file (GET /files/{id}).
type VideoJSON struct {
	Container  string  `json:"container"`
	DurationMS int64   `json:"duration_ms"`
	Width      *int64  `json:"width"`
	Height     *int64  `json:"height"`
	VideoCodec *string `json:"video_codec"`
	AudioCodec *string `json:"audio_codec"`
	Rotation   int64   `json:"rotation"`
}

func Video(p model.VideoProbe) *VideoJSON {
	return &VideoJSON{Container: p.Container, DurationMS: p.DurationMS, Width: p.Width, Height: p.Height,
		VideoCodec: p.VideoCodec, AudioCodec: p.AudioCodec, Rotation: p.Rotation}
}
