"""An OpenStack Placement compatible REST service."""
