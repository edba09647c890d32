"""Files precision_tool ships beside its code: the fusion switch templates and the HTML report's CSS and script."""
