"""Plot images from the notebooks, made fit for the web: PNGs re-encoded with a palette (and a 1x
copy of each 2x plot), cached by content; and each plot's alt text."""

from __future__ import annotations

import hashlib
import html
import io
import os
import re
import struct

from .layout import CACHE_DIR, ROOT

_PLOT_TITLE = re.compile(r"""(?:(?:set_title|suptitle|\btitle)\(\s*|\btitle\s*=\s*)[rfbu]*(["'])(.+?)\1""")
_AXIS = {axis: re.compile(rf"""(?:(?:set_)?{axis}label\(\s*|\b{axis}label\s*=\s*)[rfbu]*(["'])(.+?)\1""")
         for axis in "xy"}
_SERIES = re.compile(r"""(?<![\w])label\s*=\s*[rfbu]*(["'])(.+?)\1""")
MAX_SERIES = 6


def png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    return None


def web_png(data: bytes, size: tuple[int, int] | None = None) -> bytes:
    """A notebook's PNG re-encoded with a 256-colour palette: plots have few colours, so this is
    about a third of the bytes and looks the same. Resized to `size` first when given (the 1x
    copy of a 2x plot, for 1x screens). Cached by content and size; an image with transparency,
    or one the palette would not shrink, is kept as it is (resized)."""
    from PIL import Image

    tag = "" if size is None else f"-{size[0]}x{size[1]}"
    cached = ROOT / CACHE_DIR / "plots" / f"{hashlib.sha256(data).hexdigest()[:24]}{tag}.png"
    if cached.is_file():
        return cached.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as original:
            im = original if size is None else original.resize(size, Image.Resampling.LANCZOS)
            if size is not None:
                buffer = io.BytesIO()
                im.save(buffer, "PNG")
                data = buffer.getvalue()
            out = data
            opaque = im.mode == "RGB" or (im.mode == "RGBA" and im.getextrema()[3] == (255, 255))
            if opaque:
                small = im.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE,
                                                   dither=Image.Dither.NONE)
                buffer = io.BytesIO()
                small.save(buffer, "PNG")
                if buffer.tell() < len(data):
                    out = buffer.getvalue()
    except (OSError, SyntaxError, ValueError):
        return data  # not an image Pillow reads: served as the notebook has it
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.part")  # two builds at once (test workers)
    partial.write_bytes(out)                               # never read each other's half file
    os.replace(partial, cached)
    return out


def plain(md_text: str) -> str:
    """Prose for alt text: Markdown and TeX markup dropped, first sentence or two kept."""
    text = re.sub(r"```.*?```", " ", md_text, flags=re.S)
    prose = re.sub(r"^#+\s.*$", "", text, flags=re.M)  # a heading is the caption only alone
    text = prose if prose.strip() else re.sub(r"^#+\s*", "", text, flags=re.M)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`$\\]|\|", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    sentences = re.split(r"(?<=[.!?:])\s+", text)
    out = ""
    for s in sentences:
        if len(out) + len(s) > 240:
            break
        out = f"{out} {s}".strip()
    return out or text[:240]


def title_text(literal: str) -> str:
    """A plot title from its source literal: TeX markup dropped, each f-string field shown as …."""
    text = re.sub(r"\{[^{}]*\}", "…", literal).replace("$", "").replace("\\", "")
    text = re.sub(r"\s+", " ", text).strip(" :,-")
    return "" if not text.strip("… ") else text


def _found(pattern, code: str) -> list[str]:
    out = []
    for m in pattern.finditer(code):
        text = title_text(m.group(2))
        if text and text not in out:
            out.append(text)
    return out


def alt(code: str, caption: str, k: int, n: int) -> str:
    """What the plot shows, from the code that drew it: its title(s), what each axis measures,
    and the series its legend names. Only a plot whose code names none of these falls back to
    the prose before it (`caption`)."""
    titles, xs, ys = _found(_PLOT_TITLE, code), _found(_AXIS["x"], code), _found(_AXIS["y"], code)
    series = _found(_SERIES, code)
    parts = ["Plot" + (f" {k} of {n}" if n > 1 else "") + (f": {'; '.join(titles)}" if titles else "")]
    axes = []
    if xs:
        axes.append("horizontal axis: " + " / ".join(xs))
    if ys:
        axes.append("vertical axis: " + " / ".join(ys))
    if axes:
        text = "; ".join(axes)
        parts.append(text[0].upper() + text[1:])
    if series:
        more = len(series) - MAX_SERIES
        parts.append("Series: " + ", ".join(series[:MAX_SERIES]) + (f" and {more} more" if more > 0 else ""))
    if not (titles or axes) and caption:
        parts.append(caption)
    return html.escape(". ".join(parts), quote=True)
