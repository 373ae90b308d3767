"""Rendering what llmbench.analysis computed: tables, terminal output, Markdown, HTML and charts, for any
user's result sets (llmbench's own published pages are built on these by llmbench.publishing)."""
