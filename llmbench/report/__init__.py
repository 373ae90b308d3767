"""Turning result sets into comparisons, tables, plots, projections and the published pages."""
