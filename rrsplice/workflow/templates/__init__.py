"""Source templates of the files the builders write (real Python the linters read)."""
