package totp

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"github.com/boombuler/barcode"
	"github.com/boombuler/barcode/qr"
)

// QR image parameters.
const (
	QRSize      = 256 // pixels, width and height
	QRQuietZone = 4   // white modules kept around the code at least
)

// QRDataURL renders content as a QRSize×QRSize black-on-white PNG QR
// code (error correction M) with a quiet zone of at least QRQuietZone
// modules, and returns it as a data:image/png;base64 URL.
func QRDataURL(content string) (string, error) {
	img, err := qrImage(content)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// qrImage is QRDataURL's image before PNG encoding: a two-colour
// paletted QRSize×QRSize image with the code centred.
func qrImage(content string) (*image.Paletted, error) {
	code, err := qr.Encode(content, qr.M, qr.Auto)
	if err != nil {
		return nil, err
	}
	n := code.Bounds().Dx()
	scale := QRSize / (n + 2*QRQuietZone)
	if scale < 1 {
		scale = 1 // cannot happen: the largest QR code is 177 modules
	}
	scaled, err := barcode.Scale(code, n*scale, n*scale)
	if err != nil {
		return nil, err
	}
	dst := image.NewPaletted(image.Rect(0, 0, QRSize, QRSize), color.Palette{color.White, color.Black})
	off := (QRSize - n*scale) / 2
	draw.Draw(dst, image.Rect(off, off, off+n*scale, off+n*scale), scaled, image.Point{}, draw.Src)
	return dst, nil
}
