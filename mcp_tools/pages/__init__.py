"""The pages of the site a person opens outside the admin: confirming their own calls."""
