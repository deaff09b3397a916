// MathJax 3 configuration. MathJax itself is served by this site (assets/mathjax/), never a CDN.
// Only math containers are typeset: TeX that pymdownx.arithmatex marked in prompts, and rendered
// Markdown and LaTeX in notebooks. Code, printed output and prose elsewhere are left alone, so a
// "$" in a Python cell or a printed table is never mistaken for math.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  startup: {
    elements: [".arithmatex", ".jp-RenderedMarkdown", ".jp-RenderedLatex"],
  },
};
