import Service
