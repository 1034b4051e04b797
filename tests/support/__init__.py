"""Test support: fixtures helpers and local servers that speak external APIs."""
