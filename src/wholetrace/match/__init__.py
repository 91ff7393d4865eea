"""Path matching on compressed control-flow traces (schemes 1-4) and the indexes they use."""
