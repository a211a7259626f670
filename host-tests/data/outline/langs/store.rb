# A key-value store.
module Storage
  # Keeps values in memory.
  class Memory
    def initialize
      @items = {}
    end

    def get(key)
      @items[key]
    end
    alias fetch get

    def self.create
      new
    end
  end

  class << self
    def default
      Memory.create
    end
  end
end

class Storage::Disk < Storage::Memory
end
