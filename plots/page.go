package plots

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Page is the size of an image and, for PNG, its resolution.
type Page struct {
	Width, Height vg.Length
	DPI           int // PNG dots per inch
}

// DefaultPage is 8x5 inches at 150 DPI: a 1200x750 PNG.
var DefaultPage = Page{Width: 8 * vg.Inch, Height: 5 * vg.Inch, DPI: 150}

// Pixels is the size of the PNG the page makes, rounded as vgimg rounds.
func (p Page) Pixels() (w, h int) {
	return int(float64(p.Width/vg.Inch)*float64(p.DPI) + 0.5), int(float64(p.Height/vg.Inch)*float64(p.DPI) + 0.5)
}

// Limits on a page, so that a typo cannot ask for a gigapixel image.
const (
	minSide = 2 * vg.Inch
	maxSide = 60 * vg.Inch
	maxDPI  = 1200
)

var units = map[string]vg.Length{"in": vg.Inch, "cm": vg.Centimeter, "mm": vg.Millimeter, "pt": 1}

// ParseSize reads a page size "WxH[unit]": 8x5 and 8x5in are inches, and
// cm, mm, pt and px (pixels at dpi) work too: "20x12cm", "1600x1000px".
func ParseSize(s string, dpi int) (w, h vg.Length, err error) {
	t := strings.ToLower(strings.TrimSpace(s))
	unit := vg.Inch
	switch {
	case strings.HasSuffix(t, "px"):
		if dpi <= 0 {
			return 0, 0, fmt.Errorf("size %q: pixels need a DPI", s)
		}
		unit, t = vg.Inch/vg.Length(dpi), strings.TrimSuffix(t, "px")
	default:
		for name, u := range units {
			if strings.HasSuffix(t, name) {
				unit, t = u, strings.TrimSuffix(t, name)
				break
			}
		}
	}
	ws, hs, ok := strings.Cut(t, "x")
	wf, errW := strconv.ParseFloat(strings.TrimSpace(ws), 64)
	hf, errH := strconv.ParseFloat(strings.TrimSpace(hs), 64)
	if !ok || errW != nil || errH != nil || !(wf > 0) || !(hf > 0) {
		return 0, 0, fmt.Errorf("size %q: want WIDTHxHEIGHT with an optional unit (in, cm, mm, pt, px), e.g. 8x5 or 1600x1000px", s)
	}
	w, h = vg.Length(wf)*unit, vg.Length(hf)*unit
	if w < minSide || h < minSide || w > maxSide || h > maxSide {
		return 0, 0, fmt.Errorf("size %q: each side must be between %g and %g inches", s, float64(minSide/vg.Inch), float64(maxSide/vg.Inch))
	}
	return w, h, nil
}

// CheckDPI checks a resolution.
func CheckDPI(dpi int) error {
	if dpi < 10 || dpi > maxDPI {
		return fmt.Errorf("dpi %d: want 10 to %d", dpi, maxDPI)
	}
	return nil
}

// Formats lists the image formats, by file extension.
var Formats = []string{"png", "svg", "pdf"}

// FormatOf returns the image format a file name asks for by its
// extension: png, svg or pdf.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	if ext == "" {
		return "", fmt.Errorf("%s: no file extension to tell the image format (want .png, .svg or .pdf)", path)
	}
	return "", fmt.Errorf("%s: unknown image format %q (want .png, .svg or .pdf)", path, "."+ext)
}

// Write draws fig on a page in format (png, svg or pdf) and writes it to w.
func Write(w io.Writer, format string, fig *Figure, pg Page) error {
	if pg.Width <= 0 || pg.Height <= 0 {
		pg.Width, pg.Height = DefaultPage.Width, DefaultPage.Height
	}
	if pg.DPI <= 0 {
		pg.DPI = DefaultPage.DPI
	}
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(pg.Width, pg.Height), vgimg.UseDPI(pg.DPI))}
	case "svg":
		c = vgsvg.New(pg.Width, pg.Height)
	case "pdf":
		c = pdfCanvas{vgpdf.New(pg.Width, pg.Height)} // fonts embedded: the PDF renders anywhere
	default:
		return fmt.Errorf("unknown image format %q (want png, svg or pdf)", format)
	}
	fig.Draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// pdfCanvas works around two vgpdf limits with several fonts: it selects
// a bold font with style "B" after registering it with style "" (fpdf has
// no such font), and its fonts all embed one font program (fpdf knows
// them by their file name, the same for every font). So a PDF is drawn in
// one font, Liberation Sans, its bold text in the regular face.
type pdfCanvas struct{ *vgpdf.Canvas }

func (c pdfCanvas) FillString(f font.Face, pt vg.Point, s string) {
	if f.Font.Weight != xfont.WeightNormal {
		f = font.DefaultCache.Lookup(font.Font{Typeface: sans.Typeface, Variant: sans.Variant}, f.Font.Size)
	}
	c.Canvas.FillString(f, pt, s)
}
