"""What pack authors use, published through tonnx.converters and tonnx.testing."""
