"""Test doubles healthd ships for its users: local emulators of the services it talks to."""
